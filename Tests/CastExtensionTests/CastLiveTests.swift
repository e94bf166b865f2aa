import Foundation
import CastChannel
import CastExtension
import LiveStreaming
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
        let state = try await Self.decodedToItsEnd(rig)
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

    /// The receiver loads the stream when the app acquires the route's audio, before any sample;
    /// an app that writes only after the prepared wait finds the app stopped and loaded again.
    @Test func anAppThatWritesLateIsLoadedAgainAndHeard() async throws {
        var configuration = CastRig.fast
        configuration.live.preparedWait = .seconds(1)
        let rig = try await CastRig.make(configuration: configuration)
        let route = try await rig.activate()
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        #expect(await eventually(timeout: .seconds(5)) { rig.peer.received(CastNamespace.media, type: "LOAD").count == 1 })
        try await Task.sleep(for: .seconds(3))
        let writer = writeOnOwnThread(tone(seconds: 4), to: acquisition.descriptor, piece: 4_096)
        #expect(await writer.value)
        #expect(await eventually(timeout: .seconds(5)) { rig.peer.received(CastNamespace.media, type: "LOAD").count == 2 })
        let decoded = await eventually(timeout: .seconds(15)) {
            let state = try? await rig.peer.state()
            return ((state?["fetched"] as? [String: Any])?.values.contains { ($0 as? [String: Any])?["decoded"] != nil && (($0 as? [String: Any])?["bytes"] as? Int ?? 0) > 0 }) == true
        }
        #expect(decoded)
        let received = leftChannel(rig.peer.liveOutput.pcm)
        #expect(received.filter { abs($0) > 50 }.count > 44_100 * 3, "\(received.count) samples decoded")
        await rig.system.deactivate(route.session)
        await rig.system.shutdown()
    }

    /// A receiver whose clock runs 2 000 ppm fast (the test receiver's positions say so): the
    /// stream finds its rate from the positions it asks for, sends it more samples per second
    /// through the resampler, and the tone still decodes whole.
    @Test func aReceiverWhoseClockRunsFastIsFollowedAndItsToneStaysWhole() async throws {
        var configuration = CastRig.fast
        configuration.live.positionInterval = .milliseconds(200)
        // Far faster than a real receiver's minutes, for a 20-second test; a rate no crystal has,
        // so that what it changes is counted in frames.
        configuration.live.drift = PlayoutRateEstimator.Configuration(minimumSpan: .seconds(5), maximumUncertainty: 150, plausibleRange: 5_000)
        let rig = try await CastRig.make(configuration: configuration)
        let route = try await rig.activate()
        try await rig.peer.command("clock-ppm 2000")
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let source = tone(seconds: 20)
        let writer = writeOnOwnThread(source, to: acquisition.descriptor, piece: 4_096)
        let followed = await eventually(timeout: .seconds(18)) {
            let details = await rig.system.routeStatus(on: route.session)?.details
            return details?.driftCorrectionPPM != nil && details?.deviceClockPPM != nil
        }
        // The estimate as it stands a few seconds later, on more positions.
        try await Task.sleep(for: .seconds(5))
        let details = await rig.system.routeStatus(on: route.session)?.details
        #expect(followed, "\(String(describing: details))")
        let rate = try #require(details?.deviceClockPPM)
        #expect(abs(rate - 2_000) < 300, "measured \(rate) ppm")
        #expect(details?.timelineOffsetMicroseconds != nil)
        #expect(await writer.value)
        let state = try await Self.decodedToItsEnd(rig)
        // What the receiver decoded: the 440 Hz tone at first, then (resampled by 1 + the
        // correction) a lower one, as the stream sent more samples per second.
        let loud = Array(leftChannel(trimmingTrailingSilence(rig.peer.liveOutput.pcm)).drop { abs($0) < 50 })
        let early = Self.resamplingPPM(Array(loud.prefix(44_100 * 3)))
        let late = Self.resamplingPPM(Array(loud.suffix(44_100 * 3)))
        #expect(abs(early) < 150, "\(early) ppm at first")
        let correction = try #require(details?.driftCorrectionPPM)
        #expect(abs(late - correction) < 400 && late > 1_500, "\(late) ppm at the end, \(correction) ppm applied")
        let delivered = await rig.system.audioStatistics(on: route.session)
        expectToneIntact(trimmingTrailingSilence(rig.peer.liveOutput.pcm), underruns: Int(delivered?.underruns ?? 0), "\(state)")
        await rig.system.deactivate(route.session)
        await rig.system.shutdown()
    }

    /// A receiver that plays its decoded audio 400 ms later, and reports positions from its first
    /// decoded samples as a real receiver's media element does: the route declares the configured
    /// latency until the positions measure it, then the measure (the 400 ms and the way to the
    /// decoder: delivery's batch, HTTP, ffmpeg's start), with a route event; the next acquisition
    /// declares it at once.
    @Test func theReceiversPositionsMeasureTheLatencyTheRouteDeclares() async throws {
        var configuration = CastRig.fast
        configuration.live.positionInterval = .milliseconds(200)
        let rig = try await CastRig.make(configuration: configuration)
        let route = try await rig.activate()
        try await rig.peer.command("output-delay 400")
        let configured = try #require(await rig.system.routeStatus(on: route.session)?.details.declaredLatencyMicroseconds)
        #expect(configured == UInt64(configuration.live.latency(name: "") / .microseconds(1)))
        let first = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let writer = writeOnOwnThread(tone(seconds: 6), to: first.descriptor, piece: 4_096)
        let reason = await rig.recorder.first(timeout: .seconds(6)) { event -> String? in
            if case .routeChanged(let changed, let reason) = event, changed == route, reason.hasPrefix("latency ") { return reason }
            return nil
        }
        let measured = try #require(await rig.system.routeStatus(on: route.session)?.details.declaredLatencyMicroseconds)
        #expect(reason?.hasSuffix("by the receiver's positions (declared \(configured / 1000) ms)") == true, "\(String(describing: reason))")
        // The 400 ms it holds and the way to its decoder (0.41 s here: its first samples wait for
        // ffmpeg's probe, and a receiver that starts late plays every sample that late).
        #expect((400_000..<1_200_000).contains(measured) && measured != configured, "declared \(measured) µs after the receiver's positions")
        #expect(await writer.value)
        _ = try await Self.decodedToItsEnd(rig)
        let second = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let change = (first.latency - second.latency) / .microseconds(1)
        #expect(abs(change - Double(Int64(configured) - Int64(measured))) < 2, "\(first.latency) then \(second.latency)")
        close(second.descriptor)
        await rig.system.deactivate(route.session)
        await rig.system.shutdown()
    }

    /// Two receivers in one real-time group, one that holds its decoded audio 600 ms and one
    /// that holds none: each declares the configured second until its positions measure it, then
    /// the group leads the quicker one in by the difference (a route event each), and the leads
    /// settle — the measure is taken against each member's own presentation times, so a lead
    /// does not move it again.
    @Test func aGroupLeadsItsCastMembersByTheLatencyTheirPositionsMeasure() async throws {
        let slow = try CastReceiverPeer(name: "Slow Receiver")
        let quick = try CastReceiverPeer(name: "Quick Receiver")
        var configuration = CastRig.fast
        configuration.live.positionInterval = .milliseconds(200)
        configuration.certificatesPath = TestScratch.path("cast-pins", suffix: ".json")
        let transport = FixedEndpointsTransport(endpoints: [FixedCastTransport.endpoint(for: slow), FixedCastTransport.endpoint(for: quick)], tls: true)
        let system = RouteSystem()
        let recorder = await EventRecorder(system)
        let loaded = configuration
        try await system.load { manager in CastExtension(transport: transport, routingManager: manager, configuration: loaded) }
        await system.beginDiscovery(client: "test")
        #expect(await eventually(timeout: .seconds(5)) { await system.devicesList.count == 2 })
        let devices = await system.devicesList
        let slowRoute = try await system.activate(deviceID: try #require(devices.first { $0.displayName == slow.name }).id)
        let quickRoute = try await system.activate(deviceID: try #require(devices.first { $0.displayName == quick.name }).id)
        try await slow.command("output-delay 600")
        try await quick.command("output-delay 0")
        let (acquisition, leads) = try await system.acquireGroupAudio(on: [slowRoute.session, quickRoute.session], format: .cdAudio)
        #expect(leads == [.zero, .zero], "both declare the configured second at first: \(leads)")
        let writer = writeOnOwnThread(tone(seconds: 12), to: acquisition.descriptor, piece: 4_096)
        @Sendable func measured(_ route: ActiveRoute) async -> Int64? {
            await system.routeStatus(on: route.session)?.details.declaredLatencyMicroseconds.map { Int64($0) }
        }
        let both = await eventually(timeout: .seconds(8)) {
            let (a, b) = (await measured(slowRoute), await measured(quickRoute))
            return a != nil && b != nil && a != 1_000_000 && b != 1_000_000
        }
        #expect(both)
        // The leads as they stand once both measures came, and again two seconds later.
        let led = await eventually(timeout: .seconds(4)) { (await system.groupAudioLeads(on: slowRoute.session)?[quickRoute.session] ?? .zero) > .zero }
        let first = await system.groupAudioLeads(on: slowRoute.session) ?? [:]
        try await Task.sleep(for: .seconds(2))
        let later = await system.groupAudioLeads(on: slowRoute.session) ?? [:]
        let (slowLatency, quickLatency) = (await measured(slowRoute) ?? 0, await measured(quickRoute) ?? 0)
        let events = await recorder.events.compactMap { event -> String? in
            if case .routeChanged(let route, let reason) = event, route == quickRoute, reason.hasPrefix("led into the group") { return reason }
            return nil
        }
        #expect(led, "\(first); measured \(slowLatency) and \(quickLatency) µs")
        #expect(slowLatency - quickLatency > 400_000, "the slow one holds 600 ms more: \(slowLatency) against \(quickLatency) µs")
        let lead = (first[quickRoute.session] ?? .zero) / .microseconds(1)
        #expect(abs(lead - Double(slowLatency - quickLatency)) < 100_000, "the quick one led in by the difference: \(lead) µs")
        #expect(abs(((later[quickRoute.session] ?? .zero) - (first[quickRoute.session] ?? .zero)) / .milliseconds(1)) < 40, "the leads settle: \(first) then \(later); \(events)")
        #expect(!events.isEmpty)
        _ = await writer.value
        await system.deactivate(slowRoute.session)
        await system.deactivate(quickRoute.session)
        await system.shutdown()
    }

    /// The receiver's state once it decoded a live stream to its end (the writer closed it).
    static func decodedToItsEnd(_ rig: CastRig, sourceLocation: SourceLocation = #_sourceLocation) async throws -> [String: Any] {
        let decoded = await eventually(timeout: .seconds(15)) {
            let state = try? await rig.peer.state()
            return ((state?["fetched"] as? [String: Any])?.values.first as? [String: Any])?["decoded"] != nil
        }
        let state = try await rig.peer.state()
        #expect(decoded, "\(state)", sourceLocation: sourceLocation)
        return state
    }

    /// How much longer than a 440 Hz tone's the tone in `samples` (44.1 kHz) is stretched, in
    /// ppm: the median of the phase a 440 Hz fit loses from one 50 ms window to the one a quarter
    /// of a second later.
    static func resamplingPPM(_ samples: [Double]) -> Double {
        let window = 2_205, spacing = 11_025
        func phase(at start: Int) -> Double {
            var s = 0.0, c = 0.0
            for index in start..<(start + window) {
                let angle = 2 * Double.pi * 440 * Double(index) / 44_100
                s += samples[index] * sin(angle)
                c += samples[index] * cos(angle)
            }
            return atan2(c, s)
        }
        var estimates: [Double] = []
        var start = 0
        while start + spacing + window <= samples.count {
            var lost = phase(at: start) - phase(at: start + spacing)
            while lost > Double.pi { lost -= 2 * Double.pi }
            while lost < -Double.pi { lost += 2 * Double.pi }
            // A tone at 440 / r loses 2π·440·(1 − 1/r)·spacing/44 100 radians against 440 Hz.
            let cycles = lost / (2 * Double.pi)
            let ratio = 1 / (1 - cycles * 44_100 / (440 * Double(spacing)))
            estimates.append((ratio - 1) * 1e6)
            start += window
        }
        guard !estimates.isEmpty else { return .nan }
        return estimates.sorted()[estimates.count / 2]
    }
}
