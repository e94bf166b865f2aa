

/// An RTSP request as a RAOP sender writes it (RTSP/1.0, RFC 2326, with Apple's headers).
public struct RTSPRequest: Sendable, Hashable {
    public var method: String
    public var uri: String
    /// Header fields in order; `CSeq` and `Content-Length` are added when encoded.
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(method: String, uri: String, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.method = method
        self.uri = uri
        self.headers = headers
        self.body = body
    }

    public static func == (a: RTSPRequest, b: RTSPRequest) -> Bool {
        a.method == b.method && a.uri == b.uri && a.body == b.body && a.headers.map { [$0.0, $0.1] } == b.headers.map { [$0.0, $0.1] }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(method)
        hasher.combine(uri)
        hasher.combine(body)
    }

    /// The request's bytes with sequence number `cseq`. Header values never carry a line
    /// break: one that does is cut there (a device name in a URI cannot split the request).
    public func encoded(cseq: Int) -> [UInt8] {
        // By scalar: "\r\n" is one Character, equal to neither "\r" nor "\n".
        func clean(_ text: String) -> String {
            String(String.UnicodeScalarView(text.unicodeScalars.prefix { $0 != "\r" && $0 != "\n" }))
        }
        var text = "\(clean(method)) \(clean(uri)) RTSP/1.0\r\nCSeq: \(cseq)\r\n"
        for (name, value) in headers { text += "\(clean(name)): \(clean(value))\r\n" }
        if !body.isEmpty { text += "Content-Length: \(body.count)\r\n" }
        text += "\r\n"
        return Array(text.utf8) + body
    }
}
