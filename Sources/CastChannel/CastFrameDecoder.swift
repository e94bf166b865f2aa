/// Cuts the channel's byte stream into messages: a 4-byte big-endian length, then that many
/// bytes of protobuf. It holds at most one message's bytes; a length over
/// ``maximumMessageSize`` is refused before anything of it is read.
public struct CastFrameDecoder: Sendable {
    /// The largest message body a receiver sends or takes (64 KiB, as Chromium's sender).
    public static let maximumMessageSize = 65_536

    private var buffer: [UInt8] = []
    /// Set once a frame was refused: nothing after it can be framed.
    private var failed: CastChannelError?

    public init() {}

    /// Bytes waiting for the rest of their message.
    public var bufferedCount: Int { buffer.count }

    /// Adds bytes from the stream.
    public mutating func append(_ bytes: [UInt8]) {
        guard failed == nil else { return }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole message, nil when its bytes have not all come.
    /// - Throws: ``CastChannelError`` (oversized or malformed); after an oversized length,
    ///   every later call throws it again: the stream has lost its framing.
    public mutating func next() throws(CastChannelError) -> CastEnvelope? {
        if let failed { throw failed }
        guard buffer.count >= 4 else { return nil }
        let length = Int(buffer[0]) << 24 | Int(buffer[1]) << 16 | Int(buffer[2]) << 8 | Int(buffer[3])
        guard length <= Self.maximumMessageSize else {
            let error = CastChannelError(.oversizedMessage, "a length prefix of \(length) bytes (at most \(Self.maximumMessageSize))")
            failed = error
            buffer = []
            throw error
        }
        guard buffer.count - 4 >= length else { return nil }
        let body = Array(buffer[4..<(4 + length)])
        buffer.removeFirst(4 + length)
        return try CastEnvelope(protobuf: body)
    }
}
