/// How the length of a live response is told: renderers differ in what they accept.
public enum HTTPLiveFraming: Sendable, Hashable, CustomStringConvertible {
    /// HTTP/1.0-style: no length, the end is the connection's close (what most internet radio sends).
    case closeDelimited
    /// HTTP/1.1 chunked transfer encoding.
    case chunked
    /// A `Content-Length` of this many bytes, larger than the stream will be (for devices that
    /// want a length); the connection closes when the stream ends.
    case contentLength(UInt64)

    public var description: String {
        switch self {
        case .closeDelimited: "close-delimited"
        case .chunked: "chunked"
        case .contentLength(let length): "length \(length)"
        }
    }
}
