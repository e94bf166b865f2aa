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

/// Why bytes from a receiver are not an RTSP response.
public struct RTSPError: Error, Sendable, Hashable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Splits a receiver's byte stream into responses. Every size is bounded: the head
/// (status line and headers) to ``maximumHeadBytes``, the body to ``maximumBodyBytes``;
/// past either, or on anything that is not RTSP/1.0, it fails and stays failed.
public struct RTSPResponseParser: Sendable {
    public static let maximumHeadBytes = 16 * 1024
    public static let maximumBodyBytes = 64 * 1024
    public static let maximumHeaders = 64

    private var buffer: [UInt8] = []
    private var failure: RTSPError?

    public init() {}

    /// Takes bytes as they come; returns the responses they complete, in order.
    public mutating func consume(_ bytes: some Collection<UInt8>) throws(RTSPError) -> [RTSPResponse] {
        if let failure { throw failure }
        buffer.append(contentsOf: bytes)
        var responses: [RTSPResponse] = []
        do {
            while let response = try next() { responses.append(response) }
        } catch {
            failure = error
            buffer = []
            throw error
        }
        return responses
    }

    private mutating func next() throws(RTSPError) -> RTSPResponse? {
        guard let headEnd = Self.endOfHead(in: buffer) else {
            if buffer.count > Self.maximumHeadBytes { throw RTSPError("a response head longer than \(Self.maximumHeadBytes) bytes") }
            return nil
        }
        guard headEnd <= Self.maximumHeadBytes else { throw RTSPError("a response head longer than \(Self.maximumHeadBytes) bytes") }
        var response = try Self.head(buffer[..<headEnd])
        let length: Int
        if let text = response[header: "Content-Length"] {
            guard let value = Int(text.trimmingWhitespace), value >= 0 else { throw RTSPError("Content-Length \(text.prefix(20)) is not a length") }
            guard value <= Self.maximumBodyBytes else { throw RTSPError("a body of \(value) bytes (at most \(Self.maximumBodyBytes))") }
            length = value
        } else {
            length = 0
        }
        let bodyStart = headEnd + 4
        // Both are bounded above, so the sum cannot overflow.
        guard buffer.count - bodyStart >= length else { return nil }
        response.body = Array(buffer[bodyStart..<(bodyStart + length)])
        buffer.removeFirst(bodyStart + length)
        return response
    }

    /// The index of the blank line's `\r\n\r\n`, nil while it has not come.
    private static func endOfHead(in bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        var index = 0
        while index + 3 < bytes.count {
            if bytes[index] == 13, bytes[index + 1] == 10, bytes[index + 2] == 13, bytes[index + 3] == 10 { return index }
            index += 1
        }
        return nil
    }

    private static func head(_ bytes: ArraySlice<UInt8>) throws(RTSPError) -> RTSPResponse {
        let lines = bytes.split(separator: 10, omittingEmptySubsequences: false).map { line in
            String(decoding: line.last == 13 ? line.dropLast() : line, as: UTF8.self)
        }
        guard let statusLine = lines.first else { throw RTSPError("an empty response") }
        let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0] == "RTSP/1.0", parts[1].count == 3, let status = Int(parts[1]), (100...599).contains(status) else {
            throw RTSPError("not an RTSP/1.0 status line: \(statusLine.prefix(60))")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() where !line.isEmpty {
            guard headers.count < maximumHeaders else { throw RTSPError("more than \(maximumHeaders) header fields") }
            guard let colon = line.firstIndex(of: ":") else { throw RTSPError("a header line without a colon: \(line.prefix(60))") }
            let name = line[..<colon].trimmingWhitespace.lowercased()
            guard !name.isEmpty else { throw RTSPError("a header with no name") }
            headers[name] = line[line.index(after: colon)...].trimmingWhitespace
        }
        return RTSPResponse(status: status, reason: parts.count > 2 ? String(parts[2]) : "", headers: headers)
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    var trimmingWhitespace: String {
        var scalars = Substring(self).unicodeScalars[...]
        while let first = scalars.first, first == " " || first == "\t" { scalars.removeFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars.removeLast() }
        return String(String.UnicodeScalarView(scalars))
    }
}

/// `Transport` of a SETUP answer: the receiver's ports.
public struct RAOPTransportPorts: Sendable, Hashable {
    public var server: Int
    public var control: Int
    public var timing: Int

    public init(server: Int, control: Int, timing: Int) {
        self.server = server
        self.control = control
        self.timing = timing
    }

    /// From `RTP/AVP/UDP;unicast;mode=record;server_port=6001;control_port=6002;timing_port=6003`;
    /// nil when a port is missing or not a UDP port number. `timing_port` may be absent (0).
    public init?(transport: String) {
        var ports: [String: Int] = [:]
        for parameter in transport.split(separator: ";") {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, let value = Int(pair[1].trimmingWhitespace), (1...65_535).contains(value) else { continue }
            ports[pair[0].trimmingWhitespace.lowercased()] = value
        }
        guard let server = ports["server_port"], let control = ports["control_port"] else { return nil }
        self.init(server: server, control: control, timing: ports["timing_port"] ?? 0)
    }
}

/// The digest challenge of a receiver that asks for a password (RFC 2617 without `qop`, as
/// AirPlay receivers send it): `WWW-Authenticate: Digest realm="raop", nonce="…"`.
public struct RTSPDigestChallenge: Sendable, Hashable {
    /// The longest `WWW-Authenticate` value read; past it the challenge is refused.
    public static let maximumHeaderBytes = 1024

    public var realm: String
    public var nonce: String

    public init(realm: String, nonce: String) {
        self.realm = realm
        self.nonce = nonce
    }

    /// The challenge in a `WWW-Authenticate` value; nil when it is not a digest challenge
    /// with a realm and a nonce, or is too long.
    public init?(header: String) {
        guard header.utf8.count <= Self.maximumHeaderBytes else { return nil }
        let text = header.trimmingWhitespace
        guard text.lowercased().hasPrefix("digest ") else { return nil }
        var fields: [String: String] = [:]
        var rest = Substring(text.dropFirst(7))
        while !rest.isEmpty {
            rest = rest.drop { $0 == " " || $0 == "," || $0 == "\t" }
            guard let equals = rest.firstIndex(of: "=") else { break }
            let name = rest[..<equals].trimmingWhitespace.lowercased()
            rest = rest[rest.index(after: equals)...]
            var value: Substring
            if rest.first == "\"" {
                let body = rest.dropFirst()
                guard let close = body.firstIndex(of: "\"") else { return nil }
                value = body[..<close]
                rest = body[body.index(after: close)...]
            } else {
                let end = rest.firstIndex(of: ",") ?? rest.endIndex
                value = rest[..<end]
                rest = rest[end...]
            }
            fields[name] = String(value.trimmingWhitespace)
        }
        guard let realm = fields["realm"], let nonce = fields["nonce"], !nonce.isEmpty else { return nil }
        self.init(realm: realm, nonce: nonce)
    }

    /// The `Authorization` value for `method` on `uri` with `password`:
    /// `response = MD5(MD5(user:realm:password):nonce:MD5(method:uri))`, in lower-case hex.
    /// Quotes and line breaks in the values are dropped (they could not be sent inside quotes).
    public func authorization(username: String, password: String, method: String, uri: String) -> String {
        func quoted(_ text: String) -> String {
            String(String.UnicodeScalarView(text.unicodeScalars.filter { $0 != "\"" && $0 != "\r" && $0 != "\n" }))
        }
        let user = quoted(username), realm = quoted(self.realm), nonce = quoted(self.nonce), uri = quoted(uri)
        let credentials = MD5.hex(Array("\(user):\(realm):\(password)".utf8))
        let target = MD5.hex(Array("\(method):\(uri)".utf8))
        let response = MD5.hex(Array("\(credentials):\(nonce):\(target)".utf8))
        return "Digest username=\"\(user)\", realm=\"\(realm)\", nonce=\"\(nonce)\", uri=\"\(uri)\", response=\"\(response)\""
    }
}
