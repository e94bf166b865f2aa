import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A deliberately dumb HTTP/1.1 client over a blocking socket (run off the
/// cooperative pool), so tests can send exactly the bytes they mean, bad ones included.
public enum RawHTTP {
    public struct Response: Sendable {
        public var status: Int
        public var body: String
        public var headers: [String: String]
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Sends `request` to 127.0.0.1:`port` and reads `expecting` responses (or until the server closes).
    public static func exchange(port: Int, _ request: [UInt8], expecting: Int = 1, timeout: Int = 5) async throws -> [Response] {
        try await exchangeReportingClose(port: port, request, expecting: expecting, timeout: timeout).responses
    }

    /// Also says whether the server closed the connection (EOF) rather than the client giving up.
    public static func exchangeReportingClose(
        port: Int, _ request: [UInt8], expecting: Int = 1, timeout: Int = 5
    ) async throws -> (responses: [Response], closedByServer: Bool) {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(with: Result { try blockingExchange(port: port, request, expecting: expecting, timeout: timeout) })
            }
            thread.start()
        }
    }

    public static func post(port: Int, path: String = "/nowplaying", body: String, token: String?, headers: [String: String] = [:]) async throws -> Response {
        var text = "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
        if let token { text += "Authorization: Bearer \(token)\r\n" }
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        text += "\r\n" + body
        guard let response = try await exchange(port: port, Array(text.utf8)).first else { throw Failure(description: "no response") }
        return response
    }

    /// A blocking TCP socket connected to 127.0.0.1:`port`, reads timing out after `timeout` s.
    private static func connected(port: Int, timeout: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket") }
        var tv = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            throw Failure(description: "connect: \(code)")
        }
        return fd
    }

    private static func blockingExchange(port: Int, _ request: [UInt8], expecting: Int, timeout: Int) throws -> (responses: [Response], closedByServer: Bool) {
        let fd = try connected(port: port, timeout: timeout)
        defer { close(fd) }
        var sent = 0
        while sent < request.count {
            let n = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { break }  // the server may close early (oversized body)
            sent += n
        }
        var received: [UInt8] = []
        var responses: [Response] = []
        var closedByServer = false
        var chunk = [UInt8](repeating: 0, count: 65536)
        while responses.count < expecting {
            if let (response, used) = parse(received) {
                responses.append(response)
                received.removeFirst(used)
                continue
            }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 || (n < 0 && errno == ECONNRESET) { closedByServer = true }
            if n <= 0 { break }
            received.append(contentsOf: chunk[0..<n])
        }
        return (responses, closedByServer)
    }

    /// What a streaming answer gave: its status line, headers and the first body bytes.
    public struct StreamedResponse: Sendable {
        public var statusLine: String
        public var headers: [String: String]
        public var body: [UInt8]
        /// The server closed the connection before `bodyBytes` came.
        public var closedByServer: Bool
    }

    /// Sends `request` and reads the answer's head and up to `bodyBytes` of its body as raw
    /// bytes (a live stream never ends: the client stops reading), or until the server closes.
    public static func stream(port: Int, _ request: String, bodyBytes: Int, timeout: Int = 5) async throws -> StreamedResponse {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(with: Result { try blockingStream(port: port, Array(request.utf8), bodyBytes: bodyBytes, timeout: timeout) })
            }
            thread.start()
        }
    }

    private static func blockingStream(port: Int, _ request: [UInt8], bodyBytes: Int, timeout: Int) throws -> StreamedResponse {
        let fd = try connected(port: port, timeout: timeout)
        defer { close(fd) }
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        var headEnd: Int?
        var closed = false
        let separator: [UInt8] = [13, 10, 13, 10]
        while true {
            if headEnd == nil, received.count >= 4, let end = (0...(received.count - 4)).first(where: { Array(received[$0..<$0 + 4]) == separator }) {
                headEnd = end
            }
            if let headEnd, received.count - headEnd - 4 >= bodyBytes { break }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 || (n < 0 && errno == ECONNRESET) { closed = true }
            if n <= 0 { break }
            received.append(contentsOf: chunk[0..<n])
        }
        guard let headEnd else { throw Failure(description: "no answer head in \(received.count) bytes") }
        var lines = String(decoding: received[0..<headEnd], as: UTF8.self).components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst()
        var headers: [String: String] = [:]
        for line in lines {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2 { headers[parts[0].lowercased()] = parts[1].trimmingCharacters(in: .whitespaces) }
        }
        let body = Array(received[(headEnd + 4)...].prefix(bodyBytes))
        return StreamedResponse(statusLine: statusLine, headers: headers, body: body, closedByServer: closed)
    }

    private static func parse(_ bytes: [UInt8]) -> (Response, Int)? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard bytes.count >= 4, let end = (0...(bytes.count - 4)).first(where: { Array(bytes[$0..<$0 + 4]) == separator }) else { return nil }
        let headText = String(decoding: bytes[0..<end], as: UTF8.self)
        var lines = headText.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in lines {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2 { headers[parts[0].lowercased()] = parts[1].trimmingCharacters(in: .whitespaces) }
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        let total = end + 4 + length
        guard bytes.count >= total else { return nil }
        return (Response(status: status, body: String(decoding: bytes[(end + 4)..<total], as: UTF8.self), headers: headers), total)
    }
}
