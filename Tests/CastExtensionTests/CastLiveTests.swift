import Foundation
import CastChannel
import CastExtension
import MediaDevice
import MediaRouteTestSupport
import RouteSystem
import RoutingModel
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The box's own audio to a Cast receiver: a LIVE load of a WAV stream the daemon serves,
/// fetched and decoded by the test receiver (ffmpeg as its decoder).
@Suite(.timeLimit(.minutes(2)), .enabled(if: CastReceiverPeer.available && FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg")), .serialized)
struct CastLiveTests {
    @Test func aToneStreamedLiveIsLoadedAsLIVEWAVAndDecodesIntact() async throws {
        let rig = try await CastRig.make()
        let device = try await rig.device()
        #expect(device.capabilities.contains(.realtimeAudioStreaming))
        let route = try await rig.activate()
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let writer = writeOnOwnThread(tone(seconds: 4), to: acquisition.descriptor, piece: 4_096)
        #expect(await eventually(timeout: .seconds(5)) { !rig.peer.received(CastNamespace.media, type: "LOAD").isEmpty })
        let load = try #require(rig.peer.received(CastNamespace.media, type: "LOAD").first)
        let media = try #require(load["media"] as? [String: Any])
        #expect(media["streamType"] as? String == "LIVE")
        #expect(media["contentType"] as? String == "audio/wav")
        #expect((media["contentId"] as? String)?.contains("/media/") == true)
        let status = await rig.system.routeStatus(on: route.session)
        #expect(status?.details.codec == "WAV" && status?.details.bitrate == 1_411_200, "\(String(describing: status?.details))")
        #expect(await writer.value)
        // The stream ends with the writer: the decoder sees its end and the whole tone.
        let decoded = await eventually(timeout: .seconds(15)) {
            let state = try? await rig.peer.state()
            return ((state?["fetched"] as? [String: Any])?.values.first as? [String: Any])?["decoded"] != nil
        }
        let state = try await rig.peer.state()
        #expect(decoded, "\(state)")
        let received = leftChannel(rig.peer.liveOutput.pcm)
        #expect(received.filter { abs($0) > 50 }.count > 44_100 * 7 / 2, "\(received.count) samples decoded; \(state)")
        // Window by window (50 ms): a gap delivery reports under load costs its windows only.
        let delivered = await rig.system.audioStatistics(on: route.session)
        expectToneIntact(trimmingTrailingSilence(rig.peer.liveOutput.pcm), underruns: Int(delivered?.underruns ?? 0), "\(state)")
        await rig.system.deactivate(route.session)
        #expect(await eventually { await rig.handle.cast.servedFileCount == 0 }, "the stream is no longer served")
        await rig.system.shutdown()
    }

    @Test func aReceiverThatNeverFetchesFailsTheRouteWithinTheFetchTimeout() async throws {
        var configuration = CastRig.fast
        configuration.live.fetchTimeout = .seconds(2)
        // Heartbeats slower than the fetch timeout: with the fast rig's 0.9 s, a loaded box (both
        // cores busy, namespaced peers beside) missed one first and the route ended as the
        // receiver lost (deviceNotActive), before the fetch timeout this test is about.
        configuration.heartbeatInterval = .seconds(3)
        configuration.heartbeatTimeout = .seconds(10)
        let rig = try await CastRig.make(configuration: configuration)
        let route = try await rig.activate()
        // The receiver answers LOAD and never fetches what it loaded.
        try await rig.peer.command("refuse-fetch")
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let writer = writeOnOwnThread(tone(seconds: 30), to: acquisition.descriptor, piece: 4_096, closing: false)
        let reason = await rig.recorder.first(timeout: .seconds(10)) { event -> MediaDeviceError? in
            if case .sessionEnded(let ended, let reason?) = event, ended.session == route.session { return reason }
            return nil
        }
        #expect(reason?.code == .timedOut, "\(String(describing: reason))")
        #expect(await writer.value == false, "the writer's socket closed under it")
        close(acquisition.descriptor)
        await rig.system.shutdown()
    }
}
