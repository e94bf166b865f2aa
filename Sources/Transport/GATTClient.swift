/// A characteristic of a device's GATT database, as one connection knows it.
public struct GATTCharacteristic: Sendable, Hashable {
    /// The characteristic's UUID, 128-bit and lower case.
    public var uuid: String
    /// The transport's own handle for it (BlueZ: the characteristic's object path).
    public var handle: String

    public init(uuid: String, handle: String) {
        self.uuid = uuid
        self.handle = handle
    }
}

/// A failed GATT operation, with the ATT error code when the device gave one.
public struct GATTError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The ATT error code (Core spec Vol 3 Part F 3.4.1.1); 0x80–0x9F are the
    /// profile's own errors, e.g. the Volume Control Service's stale change counter.
    public var attErrorCode: UInt8?
    public var message: String

    public init(attErrorCode: UInt8? = nil, _ message: String) {
        self.attErrorCode = attErrorCode
        self.message = message
    }

    public var description: String {
        attErrorCode.map { "ATT error 0x\(String($0, radix: 16)): \(message)" } ?? message
    }
}

/// Reading, writing and following the characteristics of a connected Bluetooth LE device.
public protocol GATTClient: Sendable {
    /// The characteristic with this UUID, waiting up to `timeout` for the device's
    /// services to be resolved; nil when the device does not have it.
    func characteristic(_ uuid: String, timeout: Duration) async -> GATTCharacteristic?

    /// Reads the characteristic's value.
    func read(_ characteristic: GATTCharacteristic) async throws(GATTError) -> [UInt8]

    /// Writes a value, with a response (a write request) or without (a write command).
    func write(_ value: [UInt8], to characteristic: GATTCharacteristic, withResponse: Bool) async throws(GATTError)

    /// Turns notifications on and gives every notified value; the stream finishes
    /// when the characteristic or the device goes away.
    func notifications(of characteristic: GATTCharacteristic) async throws(GATTError) -> AsyncStream<[UInt8]>
}
