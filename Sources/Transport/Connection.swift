

/// One open link to a device, and what it can carry.
///
/// Transports differ in what a link to a device is: a simulated device
/// exchanges whole messages, a Bluetooth speaker offers GATT characteristics,
/// an audio socket and pairing. A connection offers each of these as a
/// capability, nil where its transport does not have it, so that an extension
/// asks for what it needs instead of knowing the transport's own types.
public protocol Connection: Sendable {
    /// The endpoint this connection reaches.
    var endpoint: Endpoint { get }

    /// Finishes when the connection is closed by us; throws ``TransportError``
    /// (`connectionLost`) when the device drops it or goes away.
    var lifetime: AsyncThrowingStream<Never, any Error> { get }

    /// Closes the connection; ``lifetime`` finishes. Idempotent.
    func close() async

    /// Whole messages both ways, where the device speaks in messages.
    var messages: (any MessageChannel)? { get }
    /// The device's GATT characteristics (Bluetooth LE).
    var gatt: (any GATTClient)? { get }
    /// The device's audio stream (a Bluetooth audio transport).
    var audio: (any AudioLink)? { get }
    /// Pairing with the device, where the transport pairs.
    var pairing: (any DevicePairing)? { get }
    /// A byte stream to the device (TCP on a LAN), where it was connected to a port.
    var byteStream: (any ByteStream)? { get }
    /// UDP sockets that talk to the device only.
    var datagrams: (any DatagramSockets)? { get }
}

extension Connection {
    public var messages: (any MessageChannel)? { nil }
    public var gatt: (any GATTClient)? { nil }
    public var audio: (any AudioLink)? { nil }
    public var pairing: (any DevicePairing)? { nil }
    public var byteStream: (any ByteStream)? { nil }
    public var datagrams: (any DatagramSockets)? { nil }
}
