#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPServing
import Testing

/// A peer (a LAN host on the media server, any local user on the push port) cannot hold the
/// daemon's descriptors: connections are capped in all and per address, and a request that
/// trickles in is closed at its deadline however often it sends a byte.
@Suite(.timeLimit(.minutes(1))) struct HTTPServerLimitsTests {
    static func connection(port: UInt16, from source: String = "127.0.0.1") -> Int32 {
        loopbackConnection(port: port, from: source)
    }

    /// Whether the server closed `fd` (a read returns end of file or a reset) within `milliseconds`.
    static func closedByServer(_ fd: Int32, within milliseconds: Int32 = 2000) -> Bool {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, milliseconds) == 1 else { return false }
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_DONTWAIT)) <= 0
    }

    static func waitFor(_ condition: () -> Bool) async {
        for _ in 0..<200 where !condition() { try? await Task.sleep(for: .milliseconds(20)) }
    }

    @Test func connectionsOverTheCapsAreClosedAtOnceAndOthersStillServed() async throws {
        let server = try await HTTPServer(
            host: "127.0.0.1", limits: HTTPServerLimits(maximumConnections: 20, maximumConnectionsPerHost: 5, requestDeadline: .seconds(30))
        ) { _ in HTTPServerResponse(status: 200, body: .bytes(Array("ok".utf8))) }
        defer { Task { await server.close() } }
        // One host opens 12: 5 stay, the rest are closed at once.
        let held = (0..<12).map { _ in Self.connection(port: server.port, from: "127.0.0.2") }
        defer { for fd in held where fd >= 0 { close(fd) } }
        await Self.waitFor { server.connectionCounts.refused >= 7 }
        #expect(server.connectionCounts.open == 5)
        #expect(server.connectionCounts.refused == 7)
        #expect(held.filter { Self.closedByServer($0, within: 200) }.count == 7)
        // Other hosts up to the overall cap: 15 more.
        let others = (0..<20).map { Self.connection(port: server.port, from: "127.0.0.\(10 + $0 / 4)") }
        defer { for fd in others where fd >= 0 { close(fd) } }
        await Self.waitFor { server.connectionCounts.open + server.connectionCounts.refused >= 32 }
        #expect(server.connectionCounts.open == 20)
        // Once some go, another host is served as before.
        for fd in others { close(fd) }
        await Self.waitFor { server.connectionCounts.open == 5 }
        let answer = exchange(port: server.port, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(answer.hasPrefix("HTTP/1.1 200") && answer.hasSuffix("ok"))
    }

    @Test func aRequestTrickledInIsClosedAtItsDeadline() async throws {
        let server = try await HTTPServer(
            host: "127.0.0.1", idleTimeout: .seconds(30), limits: HTTPServerLimits(requestDeadline: .milliseconds(800))
        ) { _ in HTTPServerResponse(status: 200) }
        defer { Task { await server.close() } }
        let fd = Self.connection(port: server.port)
        defer { close(fd) }
        // A byte every 100 ms keeps the idle timer from ever firing; the deadline still does.
        let started = ContinuousClock.now
        var closed = false
        for byte in Array("GET / HTTP/1.1\r\nX-Slow: ".utf8) + Array(repeating: UInt8(ascii: "a"), count: 100) {
            var value = byte
            if send(fd, &value, 1, Int32(MSG_NOSIGNAL)) < 0 {
                closed = true
                break
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(closed || Self.closedByServer(fd))
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(server.connectionCounts.timedOut == 1)
        await Self.waitFor { server.connectionCounts.open == 0 }
        #expect(server.connectionCounts.open == 0)
    }

    @Test func aLongAnswerIsNotCutByTheDeadlineAndKeepAliveRearmsIt() async throws {
        let body = [UInt8](repeating: 7, count: 1000)
        let server = try await HTTPServer(
            host: "127.0.0.1", limits: HTTPServerLimits(requestDeadline: .milliseconds(500))
        ) { _ in
            try? await Task.sleep(for: .milliseconds(900))
            return HTTPServerResponse(status: 200, body: .bytes(body))
        }
        defer { Task { await server.close() } }
        // The blocking client runs on a thread of its own: the handler needs the cooperative pool.
        let port = server.port
        let answer = await withCheckedContinuation { done in
            Thread { done.resume(returning: exchange(port: port, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", limit: 100_000)) }.start()
        }
        #expect(answer.hasPrefix("HTTP/1.1 200"))
        #expect(answer.utf8.count > 1000)
        // The keep-alive connection then waits for another request only until the deadline.
        #expect(server.connectionCounts.timedOut == 1)
    }
}
