

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

    /// The least round trip the transport itself measured to the device on this stream (TCP's
    /// minimum RTT, from the kernel): the device's network stack answers those, so the time
    /// its application takes to answer a request is not in it. Nil where the transport does
    /// not know.
    func leastRoundTrip() async -> Duration?

    /// The transport's smoothed round trip to the device (TCP's SRTT, from the kernel): each
    /// acknowledged write moves it an eighth of the way towards that write's own round trip,
    /// so read before and after one exchange it gives that exchange's round trip. Nil where
    /// the transport does not know.
    func smoothedRoundTrip() async -> Duration?
}

extension ByteStream {
    public var peerCertificate: [UInt8]? { nil }
    public func leastRoundTrip() async -> Duration? { nil }
    public func smoothedRoundTrip() async -> Duration? { nil }
}
