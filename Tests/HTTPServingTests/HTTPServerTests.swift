#if canImport(Glibc)
import Glibc
#endif
import HTTPServing
import Synchronization
import Testing

/// A TCP connection to 127.0.0.1:`port` from `source` (any 127.0.0.0/8 address) whose reads
/// time out after 5 s, or -1.
func loopbackConnection(port: UInt16, from source: String? = nil) -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    if let source {
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, source, &local.sin_addr)
        _ = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
    var timeout = timeval(tv_sec: 5, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else {
        close(fd)
        return -1
    }
    return fd
}

/// A blocking loopback client: sends `request`, reads until the server closes or `limit` bytes.
func exchange(port: UInt16, _ request: String, limit: Int = 65_536) -> String {
    exchangeAndClose(port: port, request, limit: limit).text
}

/// The same, also telling whether the server closed the connection (rather than the read timing out).
func exchangeAndClose(port: UInt16, _ request: String, limit: Int = 65_536) -> (text: String, closedByServer: Bool) {
    let fd = loopbackConnection(port: port)
    guard fd >= 0 else { return ("", false) }
    defer { close(fd) }
    _ = Array(request.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    var closed = false
    while received.count < limit {
        let count = recv(fd, &buffer, buffer.count, 0)
        guard count > 0 else {
            closed = count == 0
            break
        }
        received += buffer.prefix(count)
    }
    return (String(decoding: received, as: UTF8.self), closed)
}

@Suite(.timeLimit(.minutes(1))) struct HTTPServerTests {
    @Test func answersAndTellsTheHandlerOfABodyOverTheLimitWithoutReadingIt() async throws {
        let server = try await HTTPServer(host: "127.0.0.1", maximumRequestBytes: 16, answersOversizedRequests: true) { request in
            if request.bodyTooLarge { return HTTPServerResponse(status: 413, body: .bytes(Array("too large: \(request.body.count)".utf8))) }
            return HTTPServerResponse(status: 200, body: .bytes(Array("\(request.method) \(request.path) \(request.body.count)".utf8)))
        }
        defer { Task { await server.close() } }
        let port = server.port
        let small = await offPool {
            exchange(port: port, "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nConnection: close\r\n\r\nabcd")
        }
        #expect(small.hasPrefix("HTTP/1.1 200"))
        #expect(small.hasSuffix("POST /x 4"))
        let large = await offPool {
            exchange(port: port, "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n" + String(repeating: "z", count: 100))
        }
        #expect(large.hasPrefix("HTTP/1.1 413"))
        #expect(large.hasSuffix("too large: 0"), "the handler answers in its own terms, with no body read")
        #expect(large.contains("connection: close") || large.contains("Connection: close"))
    }

    @Test func byDefaultTheServerAnswersAnOversizedBodyItselfAndTheHandlerNeverSeesIt() async throws {
        let handled = Mutex(0)
        let server = try await HTTPServer(host: "127.0.0.1", maximumRequestBytes: 16) { _ in
            handled.withLock { $0 += 1 }
            return HTTPServerResponse(status: 200)
        }
        defer { Task { await server.close() } }
        let port = server.port
        let answer = await offPool {
            exchange(port: port, "NOTIFY /gena/x HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n" + String(repeating: "z", count: 100))
        }
        #expect(answer.hasPrefix("HTTP/1.1 413"))
        #expect(handled.withLock { $0 } == 0)
    }

    @Test func aSilentConnectionIsClosedAfterTheIdleTimeout() async throws {
        let server = try await HTTPServer(host: "127.0.0.1", idleTimeout: .milliseconds(200)) { _ in HTTPServerResponse(status: 204) }
        defer { Task { await server.close() } }
        let port = server.port
        let answer = await offPool { exchangeAndClose(port: port, "GET / HTTP/1.1\r\nHost: h\r\n") }
        #expect(answer.text.isEmpty, "a request that never ends gets no answer")
        #expect(answer.closedByServer, "the server hangs up (the client's own 5 s read timeout did not end it)")
    }

    @Test func aPortInUseIsATypedError() async throws {
        let server = try await HTTPServer(host: "127.0.0.1") { _ in HTTPServerResponse(status: 204) }
        defer { Task { await server.close() } }
        await #expect(throws: HTTPServerError.self) {
            _ = try await HTTPServer(host: "127.0.0.1", port: server.port) { _ in HTTPServerResponse(status: 204) }
        }
    }
}
