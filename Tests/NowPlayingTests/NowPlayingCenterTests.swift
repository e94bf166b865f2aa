#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import MediaRouteTestSupport
import NowPlaying
import Testing

@Suite(.timeLimit(.minutes(1)))
struct NowPlayingCenterTests {
    func makeCenter(_ ext: SpeakerExtension = SpeakerExtension()) async throws -> (NowPlayingCenter, SpeakerExtension) {
        let center = NowPlayingCenter()
        try await center.register(ext)
        return (center, ext)
    }

    @Test func startUpdateEndThroughTheAppAPI() async throws {
        let (center, _) = try await makeCenter()
        let session = try await RemoteMediaSession.start(attributes: SpeakerAttributes.sample(), in: center)
        #expect(await center.primarySessionID == "S1")
        var info = try #require(await center.session("S1"))
        #expect(info.content?.title == "Song Title")
        #expect(info.content?.duration == .finite(237))
        #expect(info.playback?.state == .playing(rate: 1))
        #expect(info.devices.map(\.name) == ["Living Room Speaker", "Soundbar"])
        #expect(info.devices[0].volume == 0.65)

        try await session.update(.sample(title: "Second", index: 1))
        info = try #require(await center.session("S1"))
        #expect(info.content?.title == "Second")
        #expect(info.isEnabled(.previousTrack))

        let sessions = await RemoteMediaSession<SpeakerAttributes>.activeSessions(in: center)
        #expect(sessions.map(\.id) == ["S1"])
        try await session.end()
        #expect(await center.session("S1") == nil)
        #expect(await center.primarySessionID == nil)
        await #expect(throws: RemoteMediaSessionError(.sessionNotFound, "S1")) { try await session.update(.sample()) }
    }

    @Test func updateWithAnotherIDIsRefusedAndChangesNothing() async throws {
        let (center, _) = try await makeCenter()
        let session = try await RemoteMediaSession.start(attributes: SpeakerAttributes.sample(), in: center)
        await #expect(throws: RemoteMediaSessionError.self) { try await session.update(.sample(id: "S2", title: "Other")) }
        do {
            try await session.update(.sample(id: "S2"))
        } catch {
            #expect(error.code == .idMismatch)
        }
        #expect(await center.session("S1")?.content?.title == "Song Title")
        #expect(await center.session("S2") == nil)
    }

    @Test func duplicateStartAndUnknownTypeAreRefused() async throws {
        let (center, _) = try await makeCenter()
        _ = try await RemoteMediaSession.start(attributes: SpeakerAttributes.sample(), in: center)
        await #expect(throws: RemoteMediaSessionError.self) {
            _ = try await RemoteMediaSession.start(attributes: SpeakerAttributes.sample(), in: center)
        }
        struct Other: RemoteMediaSessionAttributes { var id: String }
        do {
            _ = try await RemoteMediaSession.start(attributes: Other(id: "x"), in: center)
            Issue.record("started without an extension")
        } catch {
            #expect(error.code == .extensionNotFound)
        }
        do {
            _ = try await RemoteMediaSession.start(attributes: SpeakerAttributes.sample(id: "refuse"), in: center)
            Issue.record("started although the extension threw")
        } catch {
            #expect(error.code == .extensionFailed)
        }
        #expect(await center.sessions.map(\.sessionID) == ["S1"])
    }

    @Test func primaryFollowsRequestsAndEnds() async throws {
        let (center, _) = try await makeCenter()
        let first = try await RemoteMediaSession.start(attributes: SpeakerAttributes.sample(id: "A"), in: center)
        let second = try await RemoteMediaSession.start(attributes: SpeakerAttributes.sample(id: "B"), in: center)
        #expect(await center.primarySessionID == "A")
        try await second.requestToBecomeSystemPrimary()
        #expect(await center.primarySessionID == "B")
        try await second.end()
        #expect(await center.primarySessionID == "A")
        try await first.end()
        #expect(await center.primarySessionID == nil)
    }

    @Test func commandsReachTheSameInstanceWithTheirArguments() async throws {
        let (center, ext) = try await makeCenter()
        _ = try await RemoteMediaSession.start(attributes: SpeakerAttributes.sample(), in: center)
        #expect(await center.perform(.play) == .success)
        #expect(await center.perform(.togglePlayPause) == .success)  // playing → pause (no toggle handler)
        #expect(await center.perform(.seekToPosition(42.5)) == .success)
        #expect(await center.perform(.skipForward(42)) == .success)  // not a preferred interval: still 42
        #expect(await center.perform(.skipBackward(15)) == .success)
        #expect(await center.perform(.changePlaybackRate(2)) == .success)
        #expect(await center.perform(.nextTrack) == .success)
        #expect(
            ext.calls.value == [
                .command("play"), .command("pause"), .seek(42.5), .skip(42), .skip(-15), .rate(2), .command("next"),
            ])
        let info = try #require(await center.primarySession)
        #expect(info.command(.skipForward)?.preferredIntervals == [15, 30])
        #expect(info.command(.changePlaybackRate)?.supportedPlaybackRates == [1, 2])
        #expect(ext.sessions.value.count == 1)
    }

    @Test func disabledCommandsNeverReachTheHandler() async throws {
        let (center, ext) = try await makeCenter()
        let session = try await RemoteMediaSession.start(attributes: SpeakerAttributes.sample(index: 0), in: center)
        #expect(await center.perform(.previousTrack) == .commandDisabled)
        #expect(await center.perform(.togglePlayPause, onSession: "nope") == .noActionableNowPlayingItem)
        // Enabled flag follows the attributes without re-registering.
        try await session.update(.sample(index: 4))
        #expect(await center.perform(.nextTrack) == .commandDisabled)
        #expect(await center.perform(.previousTrack) == .success)
        #expect(await center.perform(.seekToPosition(.nan)) == .commandFailed)
        #expect(await center.perform(.changePlaybackRate(-1)) == .commandFailed)
        #expect(ext.calls.value == [.command("previous")])
    }

    @Test func aThrowingHandlerIsCommandFailed() async throws {
        let (center, ext) = try await makeCenter()
        _ = try await RemoteMediaSession.start(attributes: SpeakerAttributes.sample(), in: center)
        let session = try #require(ext.sessions.value["S1"])
        await session.setFailNext()
        #expect(await center.perform(.pause) == .commandFailed)
        #expect(await center.perform(.pause) == .success)
    }

    @Test func languageOptionsAreCheckedAgainstTheirGroups() async throws {
        let (center, ext) = try await makeCenter()
        _ = try await RemoteMediaSession.start(attributes: SpeakerAttributes.sample(), in: center)
        let english = MediaLanguageOption(kind: .legible, identifier: "en", displayName: "English", languageTag: "en")
        let french = MediaLanguageOption(kind: .audible, identifier: "fr", displayName: "Français", languageTag: "fr")
        let klingon = MediaLanguageOption(kind: .legible, identifier: "tlh", displayName: "Klingon")
        #expect(await center.perform(.enableLanguageOption(klingon)) == .noSuchContent)
        #expect(await center.perform(.disableLanguageOption(english)) == .commandFailed)  // not selected
        #expect(await center.perform(.enableLanguageOption(english)) == .success)
        #expect(await center.primarySession?.languageOptions.current.contains(english) == true)
        #expect(await center.perform(.disableLanguageOption(french)) == .commandFailed)  // audio needs a selection
        #expect(await center.perform(.disableLanguageOption(english)) == .success)  // subtitles off
        #expect(await center.primarySession?.languageOptions.current == [french])
        #expect(ext.calls.value == [.language("en", true), .language("en", false)])
    }

    @Test func deviceVolumeAbsoluteClampedAndRelative() async throws {
        let (center, ext) = try await makeCenter()
        _ = try await RemoteMediaSession.start(attributes: SpeakerAttributes.sample(), in: center)
        #expect(await center.setVolume(1.7, device: "living-room-speaker") == .success)
        #expect(await center.setVolume(-3, device: "living-room-speaker") == .success)
        #expect(await center.setVolume(.nan, device: "living-room-speaker") == .commandFailed)
        #expect(await center.setVolume(0.5, device: "soundbar") == .commandDisabled)
        #expect(await center.changeVolume(by: 2, device: "soundbar") == .success)
        #expect(await center.changeVolume(by: -1, device: "soundbar") == .success)
        #expect(await center.setVolume(0.5, device: "kitchen") == .deviceNotFound)
        #expect(ext.calls.value == [.volume(1), .volume(0), .step(1), .step(1), .step(-1)])
    }

    @Test func changesFromTheDeviceArePublished() async throws {
        let (center, ext) = try await makeCenter()
        let events = await center.events()
        _ = try await RemoteMediaSession.start(attributes: SpeakerAttributes.sample(), in: center)
        let session = try #require(ext.sessions.value["S1"])
        await session.deviceChangedTrack(title: "From the buttons")
        var titles: [String?] = []
        for await event in events {
            switch event {
            case .sessionStarted(let info): titles.append(info.content?.title)
            case .sessionUpdated(let info, _): titles.append(info.content?.title)
            default: continue
            }
            if titles.count == 2 { break }
        }
        #expect(titles == ["Song Title", "From the buttons"])
    }

    @Test func positionIsExtrapolatedNotPolled() {
        let start = Date(timeIntervalSince1970: 1000)
        let playing = MediaPlaybackSnapshot(state: .playing(rate: 2), elapsedTime: 10, timestamp: start)
        #expect(playing.elapsedTime(at: start.addingTimeInterval(5)) == 20)
        #expect(playing.elapsedTime(at: start.addingTimeInterval(500), duration: 237) == 237)
        let paused = MediaPlaybackSnapshot(state: .paused, elapsedTime: 10, timestamp: start)
        #expect(paused.elapsedTime(at: start.addingTimeInterval(5)) == 10)
    }

    @Test func tokensAreRandomRotatableAndObservable() async throws {
        let (center, _) = try await makeCenter(SpeakerExtension(topic: "box.speaker"))
        let first = try #require(await center.pushToStartToken(topic: "box.speaker"))
        #expect(first.hex.count == 64)
        #expect(PushToken(hex: first.hex) == first)
        #expect(PushToken(hex: "zz") == nil)
        #expect(!first.description.contains(first.hex))
        let updates = await RemoteMediaSession<SpeakerAttributes>.pushToStartTokenUpdates(in: center)
        var iterator = updates.makeAsyncIterator()
        #expect(await iterator.next() == first)
        let second = await center.rotatePushToStartToken(topic: "box.speaker")
        #expect(second != first)
        #expect(await iterator.next() == second)
        #expect(await RemoteMediaSession<SpeakerAttributes>.pushToStartToken(in: center) == second)
    }
}
