/// A byte stream to a device (TCP to the host that announced it): what protocols with their
/// own framing (RTSP, the Cast channel) read and write.
public protocol ByteStream: Sendable {
    /// Bytes as they arrive, in order; finishes when the device closes the stream, throws
    /// ``TransportError`` when it fails.
    var incoming: AsyncThrowingStream<[UInt8], any Error> { get }

    /// Writes `bytes` (all of them, in order).
    func write(_ bytes: [UInt8]) async throws(TransportError)

    /// The local address of the stream, as the device sees the sender (for protocols that
    /// name it, such as an SDP's origin).
    var localAddress: String { get }

    /// The device's TLS certificate (DER), for a stream the transport wrapped in TLS; nil
    /// otherwise. Nothing checked it: an extension pins it (trust on first use).
    var peerCertificate: [UInt8]? { get }
}

extension ByteStream {
    public var peerCertificate: [UInt8]? { nil }
}

/// One datagram from the device.
public struct DeviceDatagram: Sendable, Hashable {
    /// The device's port it came from.
    public var sourcePort: Int
    public var bytes: [UInt8]

    public init(sourcePort: Int, bytes: [UInt8]) {
        self.sourcePort = sourcePort
        self.bytes = bytes
    }
}

/// A UDP socket of ours that exchanges datagrams with one device only: it sends to the
/// device's host, and what other hosts send to it is dropped.
public protocol DatagramSocket: Sendable {
    /// Our port, to tell the device.
    var localPort: Int { get }
    /// Datagrams from the device's host; finishes when the socket closes.
    var incoming: AsyncStream<DeviceDatagram> { get }
    /// Sends one datagram to `port` on the device's host (dropped, not queued, when the
    /// socket cannot take it now).
    func send(_ bytes: [UInt8], toPort port: Int) async throws(TransportError)
    /// Closes the socket; ``incoming`` finishes. Idempotent.
    func close() async
}

/// Opens UDP sockets bound to the device (for protocols that use several: RAOP's audio,
/// control and timing).
public protocol DatagramSockets: Sendable {
    func open() async throws(TransportError) -> any DatagramSocket
}
