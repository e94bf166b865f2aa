/// What went wrong on a Cast channel: a message that is not one, or one the peer should not
/// have sent. Every decoder of the channel's bytes throws this and nothing else.
public struct CastChannelError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, Equatable {
        /// A length prefix over ``CastFrameDecoder/maximumMessageSize``: the peer is
        /// hostile or broken; the connection must close (nothing after it can be framed).
        case oversizedMessage
        /// Bytes that are not a `CastMessage` (truncated, a wrong field, a required one missing).
        case malformedMessage
        /// A payload that is not the JSON its namespace expects.
        case invalidPayload
        /// A message this side cannot encode (a payload over the size limit).
        case unencodable
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
