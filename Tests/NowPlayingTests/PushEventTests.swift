#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import MediaRouteTestSupport
import NowPlaying
import Testing

@Suite(.timeLimit(.minutes(1)))
struct PushEventTests {
    static let id = "A1B2C3D4-E5F6-7890-ABCD-EF1234567890"

    func makeCenter(_ ext: SpeakerExtension = SpeakerExtension(topic: "com.example.speaker")) async throws -> (NowPlayingCenter, PushToken) {
        let center = NowPlayingCenter(maximumPushSize: 4096)
        try await center.register(ext)
        return (center, try #require(await center.pushToStartToken(topic: "com.example.speaker")))
    }

    func rejection(_ body: @autoclosure () async throws(PushRejection) -> PushAcceptance) async -> PushRejection.Code? {
        do {
            _ = try await body()
            return nil
        } catch {
            return error.code
        }
    }

    @Test func theSeedsThreePayloadsStartUpdateAndEnd() async throws {
        let (center, startToken) = try await makeCenter()
        let started = try await center.handlePush(body: SeedPayloads.start.bytes, bearerToken: startToken.hex, topic: nil)
        #expect(started.event == .start)
        #expect(started.sessionID == Self.id)
        let updateToken = try #require(started.updateToken)
        #expect(await center.pushToken(forSession: Self.id) == updateToken)
        var info = try #require(await center.session(Self.id))
        #expect(info.content?.id == "track-1")
        #expect(info.content?.duration == .finite(237))
        #expect(info.content?.artwork?.url?.absoluteString == "https://example.com/artwork/track-1")
        #expect(info.playback?.timestamp == Date(timeIntervalSince1970: 1_773_662_400))  // 2026-03-16T12:00:00Z

        let updated = try await center.handlePush(body: SeedPayloads.update.bytes, bearerToken: updateToken.hex.uppercased(), topic: "com.example.speaker")
        #expect(updated.event == .update)
        info = try #require(await center.session(Self.id))
        #expect(info.content?.id == "track-2")
        #expect(info.content?.duration == .finite(312))
        #expect(info.isEnabled(.previousTrack))

        _ = try await center.handlePush(body: SeedPayloads.end.bytes, bearerToken: updateToken.hex, topic: nil)
        #expect(await center.session(Self.id) == nil)
        // A late update for the ended session: unknown session, not a crash or a restart.
        #expect(await rejection(try await center.handlePush(body: SeedPayloads.update.bytes, bearerToken: updateToken.hex, topic: nil)) == .unknownSession)
        #expect(await center.sessions.isEmpty)
    }

    @Test func tokensAreCheckedAndWrongOnesChangeNothing() async throws {
        let (center, startToken) = try await makeCenter()
        #expect(await rejection(try await center.handlePush(body: SeedPayloads.start.bytes, bearerToken: nil, topic: nil)) == .missingToken)
        #expect(await rejection(try await center.handlePush(body: SeedPayloads.start.bytes, bearerToken: "", topic: nil)) == .missingToken)
        #expect(await rejection(try await center.handlePush(body: SeedPayloads.start.bytes, bearerToken: PushToken.random().hex, topic: nil)) == .invalidToken)
        #expect(await rejection(try await center.handlePush(body: SeedPayloads.start.bytes, bearerToken: String(startToken.hex.dropLast()), topic: nil)) == .invalidToken)
        #expect(await center.sessions.isEmpty)

        let started = try await center.handlePush(body: SeedPayloads.start.bytes, bearerToken: startToken.hex, topic: nil)
        // The start token does not authorize updates, nor the update token starts.
        #expect(await rejection(try await center.handlePush(body: SeedPayloads.update.bytes, bearerToken: startToken.hex, topic: nil)) == .invalidToken)
        #expect(await center.session(Self.id)?.content?.id == "track-1")
        #expect(await rejection(try await center.handlePush(body: SeedPayloads.start.bytes, bearerToken: started.updateToken!.hex, topic: nil)) == .invalidToken)
        // A second start for the same id.
        #expect(await rejection(try await center.handlePush(body: SeedPayloads.start.bytes, bearerToken: startToken.hex, topic: nil)) == .sessionExists)

        // A rotated start token: the old one stops working.
        let rotated = await center.rotatePushToStartToken(topic: "com.example.speaker")
        let other = SeedPayloads.start.replacingOccurrences(of: Self.id, with: "other")
        #expect(await rejection(try await center.handlePush(body: other.bytes, bearerToken: startToken.hex, topic: nil)) == .invalidToken)
        _ = try await center.handlePush(body: other.bytes, bearerToken: rotated.hex, topic: nil)
        #expect(await center.sessions.count == 2)
    }

    @Test func staleMismatchedUnknownAndMalformedAreRefused() async throws {
        let (center, startToken) = try await makeCenter()
        let started = try await center.handlePush(body: SeedPayloads.start.bytes, bearerToken: startToken.hex, topic: nil)
        let token = try #require(started.updateToken).hex
        _ = try await center.handlePush(body: SeedPayloads.update.bytes, bearerToken: token, topic: nil)

        // Older than the last event (the update at 1773907444).
        let stale = SeedPayloads.update.replacingOccurrences(of: "1773907444", with: "1773907300")
            .replacingOccurrences(of: "\"track-2\"", with: "\"track-9\"")
        #expect(await rejection(try await center.handlePush(body: stale.bytes, bearerToken: token, topic: nil)) == .staleTimestamp)
        // The token of this session with another session's id.
        let otherStart = SeedPayloads.start.replacingOccurrences(of: Self.id, with: "B")
        _ = try await center.handlePush(body: otherStart.bytes, bearerToken: startToken.hex, topic: nil)
        let mismatched = SeedPayloads.update.replacingOccurrences(of: Self.id, with: "B")
        #expect(await rejection(try await center.handlePush(body: mismatched.bytes, bearerToken: token, topic: nil)) == .idMismatch)
        let unknown = SeedPayloads.update.replacingOccurrences(of: Self.id, with: "nobody")
        #expect(await rejection(try await center.handlePush(body: unknown.bytes, bearerToken: token, topic: nil)) == .unknownSession)

        let malformed = [
            "", "{", "[]", "null", #"{"aps": 1}"#, #"{"aps": {"event": "start"}}"#,
            #"{"aps": {"event": "explode", "timestamp": 1, "attributes": {"id": "x"}}}"#,
            #"{"aps": {"event": "update", "timestamp": "soon", "attributes": {"id": "x"}}}"#,
            #"{"aps": {"event": "update", "timestamp": -5, "attributes": {"id": "\#(Self.id)"}}}"#,
            #"{"aps": {"event": "update", "timestamp": 1773907999, "attributes": {"id": "\#(Self.id)"}}}"#,  // update lacks fields
            #"{"aps": {"event": "update", "timestamp": 1773907999, "attributes": {"id": 7}}}"#,
            String(repeating: "[", count: 3000),
            "\u{FEFF}\u{0}garbage",
        ]
        for body in malformed {
            #expect(await rejection(try await center.handlePush(body: body.bytes, bearerToken: token, topic: nil)) == .malformedPayload, "\(body.prefix(60))")
        }
        let huge = #"{"aps": {"event": "update", "timestamp": 1773907999, "attributes": {"id": ""# + String(repeating: "x", count: 5000) + #""}}}"#
        #expect(await rejection(try await center.handlePush(body: huge.bytes, bearerToken: token, topic: nil)) == .payloadTooLarge)
        #expect(await rejection(try await center.handlePush(body: SeedPayloads.update.bytes, bearerToken: token, topic: "com.example.other")) == .badTopic)

        // Nothing of that changed the session.
        let info = try #require(await center.session(Self.id))
        #expect(info.content?.id == "track-2")
        #expect(await center.sessions.count == 2)
    }

    @Test func acceptedUpdatesAreAppliedInOrderEvenWhenTheExtensionSuspends() async throws {
        let (center, startToken) = try await makeCenter(SpeakerExtension(updateDelay: .milliseconds(2), topic: "com.example.speaker"))
        let events = await center.events()
        let started = try await center.handlePush(body: SeedPayloads.start.bytes, bearerToken: startToken.hex, topic: nil)
        let token = try #require(started.updateToken).hex
        let count = 40
        // All sent at once; each carries its index as the track title.
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<count {
                let body = SeedPayloads.update
                    .replacingOccurrences(of: "1773907444", with: "\(1_773_907_444 + index)")
                    .replacingOccurrences(of: "\"Song Title\"", with: "\"\(index)\"")
                // Start them in order; the center accepts them in that order.
                let task = Task { _ = try? await center.handlePush(body: body.bytes, bearerToken: token, topic: nil) }
                group.addTask { await task.value }
                await Task.yield()
            }
        }
        var titles: [Int] = []
        for await event in events {
            guard case .sessionUpdated(let info, _) = event, let title = info.content?.title, let index = Int(title) else { continue }
            titles.append(index)
            if titles.count == count || index == count - 1 { break }
        }
        #expect(titles == titles.sorted())
        #expect(titles.last == count - 1)
        #expect(await center.session(Self.id)?.content?.title == "\(count - 1)")
    }
}
