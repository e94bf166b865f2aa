

/// An RTSP response.
public struct RTSPResponse: Sendable, Hashable {
    public var status: Int
    public var reason: String
    /// Header fields by lower-cased name (a repeated field keeps its last value).
    public var headers: [String: String]
    public var body: [UInt8]

    public init(status: Int, reason: String = "", headers: [String: String] = [:], body: [UInt8] = []) {
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
    }

    public subscript(header name: String) -> String? { headers[name.lowercased()] }

    /// `CSeq`, when the response has a valid one.
    public var cseq: Int? { self[header: "CSeq"].flatMap { Int($0.trimmingWhitespace) } }
}
