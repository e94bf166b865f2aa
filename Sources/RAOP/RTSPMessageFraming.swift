/// Splits a byte stream into RTSP messages — a head (start line, header fields) and a body of
/// its `Content-Length` — for both parsers. Every size is bounded: the head to
/// ``maximumHeadBytes``, the body to ``maximumBodyBytes``, the fields to ``maximumHeaders``.
struct RTSPMessageFraming: Sendable {
    static let maximumHeadBytes = 16 * 1024
    static let maximumBodyBytes = 64 * 1024
    static let maximumHeaders = 64

    /// A message: its start line, its header fields (names lowercased) and its body.
    struct Message {
        var start: String
        var headers: [String: String]
        var body: [UInt8]
    }

    private var buffer: [UInt8] = []
    /// Where the search for the blank line resumes: bytes before it were searched already.
    private var searched = 0

    mutating func append(_ bytes: some Collection<UInt8>) { buffer.append(contentsOf: bytes) }

    mutating func reset() {
        buffer = []
        searched = 0
    }

    /// The next whole message, nil while it has not all come.
    mutating func next(_ kind: String) throws(RTSPError) -> Message? {
        guard let headEnd = endOfHead() else {
            if buffer.count > Self.maximumHeadBytes { throw RTSPError("\(kind) head longer than \(Self.maximumHeadBytes) bytes") }
            return nil
        }
        guard headEnd <= Self.maximumHeadBytes else { throw RTSPError("\(kind) head longer than \(Self.maximumHeadBytes) bytes") }
        let lines = buffer[..<headEnd].split(separator: 10, omittingEmptySubsequences: false).map { line in
            String(decoding: line.last == 13 ? line.dropLast() : line, as: UTF8.self)
        }
        guard let start = lines.first, !start.isEmpty else { throw RTSPError("\(kind) without a start line") }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() where !line.isEmpty {
            guard headers.count < Self.maximumHeaders else { throw RTSPError("more than \(Self.maximumHeaders) header fields") }
            guard let colon = line.firstIndex(of: ":") else { throw RTSPError("a header line without a colon: \(line.prefix(60))") }
            let name = line[..<colon].trimmingWhitespace.lowercased()
            guard !name.isEmpty else { throw RTSPError("a header with no name") }
            headers[name] = line[line.index(after: colon)...].trimmingWhitespace
        }
        let length: Int
        if let text = headers["content-length"] {
            guard let value = Int(text.trimmingWhitespace), value >= 0 else { throw RTSPError("Content-Length \(text.prefix(20)) is not a length") }
            guard value <= Self.maximumBodyBytes else { throw RTSPError("a body of \(value) bytes (at most \(Self.maximumBodyBytes))") }
            length = value
        } else {
            length = 0
        }
        let bodyStart = headEnd + 4
        // Both are bounded above, so the sum cannot overflow.
        guard buffer.count - bodyStart >= length else { return nil }
        let body = Array(buffer[bodyStart..<(bodyStart + length)])
        buffer.removeFirst(bodyStart + length)
        searched = 0
        return Message(start: start, headers: headers, body: body)
    }

    /// The index of the blank line's `\r\n\r\n`, nil while it has not come.
    private mutating func endOfHead() -> Int? {
        guard buffer.count >= 4 else { return nil }
        var index = max(0, searched - 3)
        while index + 3 < buffer.count {
            if buffer[index] == 13, buffer[index + 1] == 10, buffer[index + 2] == 13, buffer[index + 3] == 10 { return index }
            index += 1
        }
        searched = buffer.count
        return nil
    }
}
