import Foundation
import HAP
#if canImport(Glibc)
import Glibc
#endif

/// A blocking RTSP connection to the test receiver on loopback, plain until a channel is set,
/// then sealed both ways. Run off the cooperative pool (``offPool(_:)``).
final class RTSPTestConnection {
    struct Response {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
    }

    struct Failure: Error, CustomStringConvertible { var description: String }

    private let fd: Int32
    private var sequence = 0
    private var buffer: [UInt8] = []
    var channel: HAPChannel?

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard connected == 0 else { throw Failure(description: "connect: errno \(errno)") }
    }

    deinit { close(fd) }

    func request(_ method: String, _ path: String, headers: [String: String] = [:], body: [UInt8] = []) throws -> Response {
        sequence += 1
        var text = "\(method) \(path) RTSP/1.0\r\nCSeq: \(sequence)\r\nUser-Agent: AirPlay/550.10\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if !body.isEmpty { text += "Content-Type: application/octet-stream\r\nContent-Length: \(body.count)\r\n" }
        var bytes = Array((text + "\r\n").utf8) + body
        if var channel {
            bytes = try channel.seal(bytes)
            self.channel = channel
        }
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { throw Failure(description: "send: errno \(errno)") }
            sent += count
        }
        return try readResponse()
    }

    private func fill() throws {
        var scratch = [UInt8](repeating: 0, count: 65536)
        let count = recv(fd, &scratch, scratch.count, 0)
        guard count > 0 else { throw Failure(description: count == 0 ? "the receiver closed the connection" : "recv: errno \(errno)") }
        let bytes = Array(scratch[..<count])
        if var channel {
            buffer += try channel.open(bytes)
            self.channel = channel
        } else {
            buffer += bytes
        }
    }

    private func readResponse() throws -> Response {
        let separator: [UInt8] = [13, 10, 13, 10]
        var end: Int?
        while end == nil {
            end = buffer.indices.dropLast(3).first { Array(buffer[$0..<($0 + 4)]) == separator }
            if end == nil { try fill() }
        }
        let head = String(decoding: buffer[..<end!], as: UTF8.self).components(separatedBy: "\r\n")
        buffer.removeFirst(end! + 4)
        let status = Int(head[0].split(separator: " ")[1]) ?? 0
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2 { headers[parts[0].lowercased()] = parts[1].trimmingCharacters(in: .whitespaces) }
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while buffer.count < length { try fill() }
        let body = Array(buffer.prefix(length))
        buffer.removeFirst(length)
        return Response(status: status, headers: headers, body: body)
    }
}

/// Runs blocking socket work on a thread of its own.
func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}
