

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
