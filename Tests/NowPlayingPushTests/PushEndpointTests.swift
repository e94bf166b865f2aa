import Foundation
import MediaRouteTestSupport
import NowPlaying
import NowPlayingPush
import Testing

@Suite(.timeLimit(.minutes(1)))
struct PushEndpointTests {
    static let id = "A1B2C3D4-E5F6-7890-ABCD-EF1234567890"

    /// A center with the seeds' extension and an endpoint on a free loopback port.
    func withEndpoint(idleTimeout: Duration = .seconds(5), _ body: (NowPlayingCenter, PushEndpoint, PushToken) async throws -> Void) async throws {
        let center = NowPlayingCenter(maximumPushSize: 4096)
        try await center.register(SpeakerExtension(topic: "com.example.speaker"))
        let endpoint = try await PushEndpoint.bind(PushEndpoint.Configuration(port: 0, idleTimeout: idleTimeout), center: center)
        let server = Task { await endpoint.run() }
        defer {
            endpoint.close()
            server.cancel()
        }
        try await body(center, endpoint, try #require(await center.pushToStartToken(topic: "com.example.speaker")))
    }

    func json(_ response: RawHTTP.Response) -> [String: String] {
        (try? JSONDecoder().decode([String: String].self, from: Data(response.body.utf8))) ?? [:]
    }

    @Test func theSeedsPayloadsOverHTTP() async throws {
        try await withEndpoint { center, endpoint, startToken in
            let started = try await RawHTTP.post(port: endpoint.localPort, body: SeedPayloads.start, token: startToken.hex,
                                                 headers: ["apns-push-type": "nowplaying", "apns-topic": "com.example.speaker"])
            #expect(started.status == 200)
            #expect(started.headers["content-type"] == "application/json")
            let token = try #require(json(started)["updateToken"])
            #expect(json(started)["session"] == Self.id)
            #expect(try #require(await center.pushToken(forSession: Self.id)).hex == token)

            let updated = try await RawHTTP.post(port: endpoint.localPort, body: SeedPayloads.update, token: token)
            #expect(updated.status == 200)
            #expect(await center.session(Self.id)?.content?.id == "track-2")
            let ended = try await RawHTTP.post(port: endpoint.localPort, body: SeedPayloads.end, token: token)
            #expect(ended.status == 200)
            #expect(await center.sessions.isEmpty)
        }
    }

    @Test func badRequestsGetClearErrorsAndChangeNothing() async throws {
        try await withEndpoint { center, endpoint, startToken in
            let port = endpoint.localPort
            func check(_ response: RawHTTP.Response, _ status: Int, _ reason: String) {
                #expect(response.status == status, "\(reason): \(response.body)")
                #expect(json(response)["reason"] == reason)
            }
            check(try await RawHTTP.post(port: port, body: SeedPayloads.start, token: nil), 401, "MissingProviderToken")
            check(try await RawHTTP.post(port: port, body: SeedPayloads.start, token: PushToken.random().hex), 403, "InvalidProviderToken")
            check(try await RawHTTP.post(port: port, body: "{not json", token: startToken.hex), 400, "BadPayload")
            check(try await RawHTTP.post(port: port, body: SeedPayloads.start, token: startToken.hex, headers: ["apns-push-type": "alert"]), 400, "InvalidPushType")
            check(try await RawHTTP.post(port: port, body: SeedPayloads.start, token: startToken.hex, headers: ["apns-topic": "nope"]), 400, "BadTopic")
            let big = String(repeating: " ", count: 5000) + SeedPayloads.start
            check(try await RawHTTP.post(port: port, body: big, token: startToken.hex), 413, "PayloadTooLarge")
            let get = try await RawHTTP.exchange(port: port, Array("GET /nowplaying HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            check(try #require(get.first), 405, "MethodNotAllowed")
            let other = try await RawHTTP.exchange(port: port, Array("POST /admin HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n".utf8))
            check(try #require(other.first), 404, "BadPath")
            // Garbage that is not HTTP: a 400 from the parser or a closed connection, never a crash.
            let garbage = try await RawHTTP.exchange(port: port, Array("\u{0}\u{1}GARBAGE\r\n\r\n".utf8))
            #expect(garbage.first.map { $0.status == 400 } ?? true)
            #expect(await center.sessions.isEmpty)

            // Still serving after all that.
            let started = try await RawHTTP.post(port: port, body: SeedPayloads.start, token: startToken.hex)
            #expect(started.status == 200)
            let token = try #require(json(started)["updateToken"])
            let stale = SeedPayloads.update.replacingOccurrences(of: "1773907444", with: "1773900000")
            check(try await RawHTTP.post(port: port, body: stale, token: token), 409, "StaleTimestamp")
            check(try await RawHTTP.post(port: port, body: SeedPayloads.start, token: startToken.hex), 409, "SessionExists")
            let unknown = SeedPayloads.update.replacingOccurrences(of: Self.id, with: "nobody")
            check(try await RawHTTP.post(port: port, body: unknown, token: token), 404, "UnknownSession")
            #expect(await center.session(Self.id)?.content?.id == "track-1")
        }
    }

    @Test func keepAliveServesSeveralRequestsInOrder() async throws {
        try await withEndpoint { center, endpoint, startToken in
            let started = try await RawHTTP.post(port: endpoint.localPort, body: SeedPayloads.start, token: startToken.hex)
            let token = try #require(json(started)["updateToken"])
            var pipelined = ""
            for index in 0..<10 {
                let body = SeedPayloads.update
                    .replacingOccurrences(of: "1773907444", with: "\(1_773_907_444 + index)")
                    .replacingOccurrences(of: "\"Song Title\"", with: "\"\(index)\"")
                pipelined += "POST /nowplaying HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
            }
            let responses = try await RawHTTP.exchange(port: endpoint.localPort, Array(pipelined.utf8), expecting: 10)
            #expect(responses.map(\.status) == Array(repeating: 200, count: 10))
            #expect(await center.session(Self.id)?.content?.title == "9")
        }
    }

    @Test func aSilentConnectionIsClosed() async throws {
        try await withEndpoint(idleTimeout: .milliseconds(500)) { _, endpoint, _ in
            // Headers promise a body that never comes; the idle timeout (0.5 s) closes the connection.
            // The client would wait 30 s; the server's idle timeout must end it first (EOF, not our timeout).
            let (responses, closedByServer) = try await RawHTTP.exchangeReportingClose(
                port: endpoint.localPort, Array("POST /nowplaying HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{".utf8), timeout: 30)
            #expect(responses.isEmpty)
            #expect(closedByServer)
        }
    }
}
