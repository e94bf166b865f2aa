import Foundation
import LoopbackExtension
import LoopbackTransport
import MediaDevice
import MediaRouteTestSupport
import RouteSystem
import Testing
import RoutingModel
import SampleSink

/// A rig with the TV paired and active.
func activeTV(devices: [LoopbackDeviceSpec] = [LoopbackRig.tv, LoopbackRig.speaker]) async throws -> (LoopbackRig, ActiveRoute) {
    let rig = try await LoopbackRig(devices: devices)
    await rig.system.setPairingAgent(ScriptedPairingAgent([.code("1234")]))
    await rig.discover(expecting: devices.count)
    let route = try await rig.system.activate(deviceID: "Living Room TV")
    return (rig, route)
}

@Suite(.timeLimit(.minutes(1))) struct SessionTests {
    let url = URL(string: "http://media.example/movie.mp4")!

    @Test func aURLSessionPlaysAndItsPositionAdvancesWithTimeAndRate() async throws {
        let (rig, route) = try await activeTV()
        let control = try await rig.system.startSession(on: route.session, identifier: "org.example.app", url: url)
        #expect(control.isPlaying)
        #expect(control.metadata.contentURL == url)
        rig.clock.advance(by: .seconds(10))
        #expect(abs(control.currentPlaybackPosition - 10) < 0.001)

        control.playbackSpeed = 2
        #expect(await eventually { control.snapshot.playbackSpeed == 2 })
        rig.clock.advance(by: .seconds(5))
        #expect(abs(control.currentPlaybackPosition - 20) < 0.001)

        // The device confirms what the control extrapolates.
        control.isPlaying = false
        #expect(await eventually { control.playbackState == .paused })
        let paused = control.currentPlaybackPosition
        rig.clock.advance(by: .seconds(5))
        #expect(control.currentPlaybackPosition == paused)
        #expect(abs(paused - 20) < 0.001)

        let started = await rig.recorder.first { event -> String? in
            if case .sessionStarted(_, let application) = event { return application }
            return nil
        }
        #expect(started == "org.example.app")
    }

    @Test func onlyOneURLSessionPerRouteAndStopEndsIt() async throws {
        let (rig, route) = try await activeTV()
        let control = try await rig.system.startSession(on: route.session, identifier: nil, url: url)
        await #expect(throws: MediaDeviceError.self) {
            _ = try await rig.system.startSession(on: route.session, identifier: nil, url: url)
        }
        await rig.system.stopSession(on: route.session)
        #expect(await rig.system.playbackControl(for: route.session) == nil)
        let ended = await rig.recorder.first { event -> Bool? in
            if case .sessionEnded(let r, let reason) = event, r == route { return reason == nil }
            return nil
        }
        #expect(ended == true)
        #expect(await rig.system.state(of: route.key) == .active, "the route stays active")
        _ = control
        _ = try await rig.system.startSession(on: route.session, identifier: nil, url: url)
    }

    @Test func badURLsAndMissingCapabilitiesAreRefused() async throws {
        let (rig, route) = try await activeTV()
        await #expect(throws: MediaDeviceError(.invalidArgument, "unsupported URL javascript:alert(1)")) {
            _ = try await rig.system.startSession(on: route.session, identifier: nil, url: URL(string: "javascript:alert(1)")!)
        }
        let speaker = try await rig.system.activate(deviceID: "Kitchen Speaker")
        do {
            _ = try await rig.system.startSession(on: speaker.session, identifier: nil, url: url)
            Issue.record("a speaker without URL playback started a URL session")
        } catch let error as MediaDeviceError {
            #expect(error.code == .unsupported)
        }
    }

    @Test func aDeviceLostMidSessionEndsTheSessionAndTheRouteWithAnEvent() async throws {
        let (rig, route) = try await activeTV()
        let control = try await rig.system.startSession(on: route.session, identifier: nil, url: url)
        await rig.transport.removeDevice(named: "tv")
        let sessionReason = await rig.recorder.first { event -> MediaDeviceError.Code? in
            if case .sessionEnded(let r, let reason?) = event, r == route { return reason.code }
            return nil
        }
        let routeReason = await rig.recorder.first { event -> MediaDeviceError.Code? in
            if case .routeDeactivated(let r, let reason?) = event, r == route { return reason.code }
            return nil
        }
        #expect([.deviceLost, .sessionFailed].contains(sessionReason))
        #expect([.deviceLost, .connectionFailed].contains(routeReason))
        #expect(await eventually { await rig.system.activeRoutes.isEmpty })
        #expect(await eventually { await rig.system.devicesList.map(\.displayName) == ["Kitchen Speaker"] })
        #expect(await rig.system.playbackControl(for: route.session) == nil)
        _ = control
    }

    @Test func aConnectionDroppedMidSessionEndsTheSessionWithAnEvent() async throws {
        let (rig, route) = try await activeTV()
        _ = try await rig.system.startSession(on: route.session, identifier: nil, url: url)
        await rig.transport.dropConnections(to: "tv")
        let reason = await rig.recorder.first { event -> MediaDeviceError.Code? in
            if case .sessionEnded(let r, let reason?) = event, r == route { return reason.code }
            return nil
        }
        #expect(reason == .sessionFailed)
        #expect(await eventually { await rig.system.activeRoutes.isEmpty })
        // The device is still there and can be activated again.
        await rig.system.setPairingAgent(ScriptedPairingAgent([.code("1234")]))
        _ = try await rig.system.activate(deviceID: "Living Room TV")
    }

    @Test func operationsOnAnInactiveSessionAreRefused() async throws {
        let (rig, route) = try await activeTV()
        await rig.system.deactivate(route.session)
        for operation in [
            { try await rig.system.setVolume(0.5, on: route.session) },
            { try await rig.system.changeVolume(by: 1, on: route.session) },
            { _ = try await rig.system.startSession(on: route.session, identifier: nil, url: self.url) },
            { try await rig.system.sendSessionData(Data([1]), on: route.session) },
        ] as [@Sendable () async throws -> Void] {
            do {
                try await operation()
                Issue.record("an operation on an inactive route succeeded")
            } catch let error as MediaDeviceError {
                #expect(error.code == .deviceNotActive)
            }
        }
    }
}

@Suite(.timeLimit(.minutes(1))) struct VolumeRoutingTests {
    @Test func absoluteDevicesTakeLevelsStepsAndMute() async throws {
        let (rig, route) = try await activeTV()
        try await rig.system.setVolume(0.75, on: route.session)
        #expect(await eventually { (try? await rig.system.volume(on: route.session).volume) == 0.75 })
        try await rig.system.changeVolume(by: -2, on: route.session)
        #expect(await eventually { (try? await rig.system.volume(on: route.session).volume) == 0.625 })
        try await rig.system.setVolume(7, on: route.session)
        #expect(await eventually { (try? await rig.system.volume(on: route.session).volume) == 1 }, "clamped")
        await #expect(throws: MediaDeviceError.self) { try await rig.system.setVolume(.nan, on: route.session) }
        try await rig.system.setMuted(true, on: route.session)
        #expect(await eventually { (try? await rig.system.volume(on: route.session).muted) == true })
    }

    @Test func relativeOnlyDevicesGetStepsAndRefuseAbsoluteLevels() async throws {
        let rig = try await LoopbackRig()
        await rig.discover(expecting: 2)
        let route = try await rig.system.activate(deviceID: "Kitchen Speaker")
        #expect(route.device.volumeControl == .relative)
        do {
            try await rig.system.setVolume(0.3, on: route.session)
            Issue.record("an absolute level was accepted by a relative-only device")
        } catch let error as MediaDeviceError {
            #expect(error.code == .volumeControlUnsupported)
            #expect(error.message.contains("relative"))
        }
        try await rig.system.changeVolume(by: 2, on: route.session)
        // 0.5 + 2 steps of 1/16.
        #expect(await eventually { (try? await rig.system.volume(on: route.session).volume) == 0.625 })
        await #expect(throws: MediaDeviceError.self) { try await rig.system.setMuted(true, on: route.session) }
    }

    @Test func aVolumeChangeOnTheDeviceReachesObservers() async throws {
        let (rig, route) = try await activeTV()
        await rig.transport.changeVolumeOnDevice(named: "tv", to: 0.9)
        let level = await rig.recorder.first { event -> Float? in
            if case .volumeChanged(let r, let volume, _) = event, r == route { return volume }
            return nil
        }
        #expect(level == 0.9)
        #expect(try await rig.system.volume(on: route.session).volume == 0.9)
    }

    @Test func scheduledDeviceVolumeChangesArriveOnTheClock() async throws {
        var tv = LoopbackRig.tv
        tv.deviceVolumeChanges = [.init(after: 30, volume: 0.1)]
        let (rig, route) = try await activeTV(devices: [tv])
        #expect(try await rig.system.volume(on: route.session).volume == 0.4)
        #expect(await advance(rig.clock, by: .seconds(5), upTo: .seconds(60)) {
            (try? await rig.system.volume(on: route.session).volume) == 0.1
        })
    }
}

@Suite(.timeLimit(.minutes(1))) struct DataChannelAndSampleTests {
    @Test func dataFlowsBothWaysOnTheRouteAndSessionChannels() async throws {
        let (rig, route) = try await activeTV()
        // Route channel: app → extension → app.
        try await rig.system.sendRouteData(Data("ping".utf8), fromApplication: "org.example.app", on: route.session)
        let routeReply = await rig.recorder.first { event -> String? in
            if case .routeData(let r, let application, let data) = event, r == route {
                return "\(application):\(String(decoding: data, as: UTF8.self))"
            }
            return nil
        }
        #expect(routeReply == "org.example.app:extension:ping")

        // Session channel: app → device application → app; needs a session with an application.
        await #expect(throws: MediaDeviceError.self) { try await rig.system.sendSessionData(Data([1]), on: route.session) }
        _ = try await rig.system.startSession(on: route.session, identifier: "org.example.app", url: URL(string: "http://m/x")!)
        try await rig.system.sendSessionData(Data("hello".utf8), on: route.session)
        let sessionReply = await rig.recorder.first { event -> String? in
            if case .sessionData(let r, let application, let data) = event, r == route {
                return "\(application):\(String(decoding: data, as: UTF8.self))"
            }
            return nil
        }
        #expect(sessionReply == "org.example.app:ack:hello")
    }

    @Test func realtimeAudioReachesTheSpeaker() async throws {
        let rig = try await LoopbackRig()
        await rig.discover(expecting: 2)
        let route = try await rig.system.activate(deviceID: "Kitchen Speaker")
        let sink = try await rig.system.startRealtimeSampleDelivery(on: route.session)
        let source = rampFrames(5 * 882)
        for index in 0..<5 {
            try await sink.send(SampleBuffer(
                format: .cdAudio, presentationTime: .milliseconds(20 * index), frameCount: 882,
                data: Array(source[(index * 882 * 4)..<((index + 1) * 882 * 4)])))
        }
        await sink.finish()
        // The writer closed: all it sent plays out at the device's pace, and nothing more
        // (silence only where this task was late for the device's clock).
        #expect(await eventually { await rig.system.audioStatistics(on: route.session)?.active == false })
        let statistics = try #require(await rig.system.audioStatistics(on: route.session))
        #expect(statistics.framesReceived == 5 * 882)
        #expect(statistics.framesDelivered == 5 * 882 + statistics.silenceFrames)
        #expect(await eventually { await rig.transport.audioFramesReceived(by: "speaker") == Int(statistics.framesDelivered) })
        let arrived = withoutSilence(await rig.transport.audioReceived(by: "speaker")).audio
        #expect(sameBytes(arrived, source), "\(arrived.count) bytes arrived, \(source.count) sent")
        let delivered = await rig.transport.audioFramesReceived(by: "speaker")
        await rig.system.stopRealtimeSampleDelivery(on: route.session)
        await #expect(throws: MediaDeviceError.self) {
            try await sink.send(SampleBuffer(format: .cdAudio, presentationTime: .zero, frameCount: 882, data: [0, 0, 0, 0]))
        }
        try await Task.sleep(for: .milliseconds(30))
        #expect(await rig.transport.audioFramesReceived(by: "speaker") == delivered, "nothing flows after stop")

        let tv = try await { () async throws -> ActiveRoute in
            await rig.system.setPairingAgent(ScriptedPairingAgent([.code("1234")]))
            return try await rig.system.activate(deviceID: "Living Room TV")
        }()
        do {
            _ = try await rig.system.startRealtimeSampleDelivery(on: tv.session)
            Issue.record("a TV without real-time audio accepted samples")
        } catch let error as MediaDeviceError {
            #expect(error.code == .unsupported)
        }
    }
}

@Suite(.timeLimit(.minutes(1))) struct PacedAudioTests {
    @Test func pcmWrittenToTheDescriptorArrivesBitExact() async throws {
        let rig = try await LoopbackRig()
        await rig.discover(expecting: 2)
        let route = try await rig.system.activate(deviceID: "Kitchen Speaker")
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        #expect(acquisition.format == .cdAudio)
        #expect(acquisition.latency >= .milliseconds(10))
        let source = rampFrames(13_230)  // 0.3 s, written in pieces that cut frames
        let descriptor = acquisition.descriptor
        let events = await rig.system.events()
        #expect(await writeOnOwnThread(source, to: descriptor, piece: 999, closing: false).value)
        close(descriptor)
        // The end is an event with the last statistics, so nothing has to poll for it.
        var ended: RealtimeAudioStatistics?
        for await event in events {
            if case .audioEnded(let endedRoute, let last) = event, endedRoute.session == route.session {
                ended = last
                break
            }
        }
        let statistics = try #require(await rig.system.audioStatistics(on: route.session))
        #expect(statistics.active == false && ended == statistics)
        #expect(statistics.framesReceived == 13_230)
        #expect(await eventually { await rig.transport.audioFramesReceived(by: "speaker") == Int(statistics.framesDelivered) })
        let (audio, silent) = withoutSilence(await rig.transport.audioReceived(by: "speaker"))
        #expect(sameBytes(audio, source), "the speaker got every sample, in order (\(audio.count) of \(source.count) bytes; \(statistics.framesDropped) frames dropped)")
        #expect(UInt64(silent) == statistics.silenceFrames)
        // Handed over on the delivering thread (the extension's receiver), none through its actor.
        #expect(await rig.extensions.first?.buffersThroughActor == 0)
    }

    @Test func aFormatTheRouteCannotTakeIsRefusedNamingWhatItTakes() async throws {
        let rig = try await LoopbackRig()
        await rig.discover(expecting: 2)
        let route = try await rig.system.activate(deviceID: "Kitchen Speaker")
        for format in [
            SampleBuffer.Format(encoding: .pcmS16LE, sampleRate: 22_050, channels: 2),
            SampleBuffer.Format(encoding: .pcmS16LE, sampleRate: 44_100, channels: 6),
            SampleBuffer.Format(encoding: .encoded, sampleRate: 44_100, channels: 2),
        ] {
            do {
                _ = try await rig.system.acquireAudio(on: route.session, format: format)
                Issue.record("\(format) was accepted")
            } catch let error as MediaDeviceError {
                #expect(error.code == .unsupported)
                #expect(error.message.contains("s16le or f32le, 44100 or 48000 Hz, 1-2 channels"), "\(error.message)")
            }
        }
        #expect(await rig.system.audioStatistics(on: route.session) == nil, "nothing was started")
    }

    @Test func aNewAcquisitionEndsTheOldOneAndTheRouteEndEndsBoth() async throws {
        let rig = try await LoopbackRig()
        await rig.discover(expecting: 2)
        let route = try await rig.system.activate(deviceID: "Kitchen Speaker")
        let first = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let second = try await rig.system.acquireAudio(on: route.session, format: SampleBuffer.Format(encoding: .pcmF32LE, sampleRate: 48_000, channels: 1))
        let probe: [UInt8] = [1, 2, 3, 4]
        func refused(_ descriptor: Int32) async -> Bool {
            await eventually { probe.withUnsafeBytes { send(descriptor, $0.baseAddress!, 4, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) } < 0 && errno == EPIPE }
        }
        #expect(await refused(first.descriptor), "the first writer sees its stream end")
        #expect(await rig.system.audioStatistics(on: route.session)?.format.sampleRate == 48_000)
        await rig.system.deactivate(route.session)
        #expect(await refused(second.descriptor), "deactivating the route ends delivery")
        #expect(await rig.system.audioStatistics(on: route.session) == nil)
        close(first.descriptor)
        close(second.descriptor)
    }

    @Test func theSpeakerVanishingMidStreamEndsTheRouteAndLeaksNothing() async throws {
        @Sendable func openDescriptors() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1 }
        var after: [Int] = []
        // Twice: the first run also opens what lives as long as the process (the I/O reactor).
        for _ in 0..<2 {
            let rig = try await LoopbackRig(devices: [LoopbackRig.speaker])
            await rig.discover(expecting: 1)
            let route = try await rig.system.activate(deviceID: "Kitchen Speaker")
            let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
            let descriptor = acquisition.descriptor
            let writer = writeOnOwnThread(rampFrames(44_100 * 30), to: descriptor, piece: 4_096, closing: false)
            #expect(await eventually { (await rig.system.audioStatistics(on: route.session)?.framesDelivered ?? 0) > 4_410 })
            await rig.transport.removeDevice(named: "speaker")
            let reason = await rig.recorder.first { event -> MediaDeviceError.Code? in
                if case .routeDeactivated(let ended, let reason?) = event, ended == route { return reason.code }
                return nil
            }
            #expect(reason == .deviceLost || reason == .connectionFailed, "\(String(describing: reason))")
            #expect(await writer.value == false, "the writer's socket closed under it")
            close(descriptor)
            #expect(await rig.system.audioStatistics(on: route.session) == nil)
            await rig.system.shutdown()
            try await Task.sleep(for: .milliseconds(100))
            after.append(openDescriptors())
        }
        #expect(after[1] <= after[0], "descriptors open after each run: \(after)")
    }
}

@Suite(.timeLimit(.minutes(1))) struct GroupAudioTests {
    static let quick = LoopbackDeviceSpec(name: "quick", displayName: "Quick Speaker", kind: .speaker, audioLatency: 0.05)
    static let slow = LoopbackDeviceSpec(name: "slow", displayName: "Slow Speaker", kind: .speaker, audioLatency: 0.2)

    /// The two speakers, discovered and activated, with `configuration`.
    static func speakers(
        _ configuration: RouteSystem.Configuration = RouteSystem.Configuration()
    ) async throws -> (rig: LoopbackRig, quick: ActiveRoute, slow: ActiveRoute) {
        let rig = try await LoopbackRig(devices: [quick, slow], configuration: configuration)
        await rig.discover(expecting: 2)
        return (rig, try await rig.system.activate(deviceID: "Quick Speaker"), try await rig.system.activate(deviceID: "Slow Speaker"))
    }

    /// A group of the two speakers with `frames` ramp frames written into it by a detached writer
    /// (true when it wrote everything).
    static func playingGroup(frames: Int) async throws -> (rig: LoopbackRig, quick: ActiveRoute, slow: ActiveRoute, writer: Task<Bool, Never>) {
        let (rig, quick, slow) = try await speakers()
        let (acquisition, _) = try await rig.system.acquireGroupAudio(on: [quick.session, slow.session], format: .cdAudio)
        let descriptor = acquisition.descriptor
        let writer = writeOnOwnThread(rampFrames(frames), to: descriptor, piece: 1_764)
        return (rig, quick, slow, writer)
    }

    @Test func oneDeliveryFeedsEveryMemberAlignedToTheSlowest() async throws {
        let (rig, quick, slow) = try await Self.speakers()
        let (acquisition, leads) = try await rig.system.acquireGroupAudio(on: [quick.session, slow.session], format: .cdAudio)
        #expect(leads == [.milliseconds(150), .zero], "the quicker device starts 150 ms later")
        #expect(acquisition.latency >= .milliseconds(200))
        let source = rampFrames(8_820)
        let descriptor = acquisition.descriptor
        #expect(await writeOnOwnThread(source, to: descriptor, piece: 1_000, closing: false).value)
        close(descriptor)
        #expect(await eventually { await rig.system.audioStatistics(on: slow.session)?.active == false })
        #expect(await eventually { await rig.transport.audioFramesReceived(by: "slow") >= 8_820 })
        #expect(await eventually { await rig.transport.audioFramesReceived(by: "quick") >= 8_820 + 6_615 })
        let (slowAudio, _) = withoutSilence(await rig.transport.audioReceived(by: "slow"))
        let (quickAudio, quickSilence) = withoutSilence(await rig.transport.audioReceived(by: "quick"))
        #expect(sameBytes(slowAudio, source) && sameBytes(quickAudio, source), "both got every sample, in order")
        #expect(quickSilence >= 6_615, "the lead came first as silence: \(quickSilence)")
        let statistics = try #require(await rig.system.audioStatistics(on: quick.session))
        #expect(statistics.framesReceived == 8_820 && statistics.framesDropped == 0)
    }

    /// A member's device reports another latency mid-stream (as an A2DP speaker's delay report
    /// does): its lead follows — 30 ms more silence when it now buffers less, 100 ms of samples
    /// left out when it buffers more — each move is an event, the leads are readable, and the
    /// slowest member is untouched.
    @Test func aMemberThatReportsAnotherLatencyIsLedInAgain() async throws {
        let (rig, quick, slow) = try await Self.speakers()
        let (acquisition, leads) = try await rig.system.acquireGroupAudio(on: [quick.session, slow.session], format: .cdAudio)
        #expect(leads == [.milliseconds(150), .zero])
        // Five seconds: the second move must come while the stream still has 100 ms to leave out. With
        // two seconds, a test slowed by both cores being busy sometimes moved it near the end, and
        // only what was left (4 225 frames) could be left out.
        let seconds = 5
        let total = 44_100 * seconds
        let source = rampFrames(total)
        let writer = writeOnOwnThread(source, to: acquisition.descriptor, piece: 1_764, closing: false)
        #expect(await eventually { await rig.transport.audioFramesReceived(by: "quick") > 6_615 + 4_410 })
        @Sendable func realigned(after count: Int) async -> [String] {
            await eventually { rig.recorder.events.filter { Self.realignment($0, of: quick) != nil }.count > count }
            return rig.recorder.events.compactMap { Self.realignment($0, of: quick) }
        }
        await rig.transport.reportAudioLatency(0.02, named: "quick")
        #expect(await realigned(after: 0) == ["led into the group by 180 ms (was 150)"])
        #expect(await rig.system.groupAudioLeads(on: slow.session)?[quick.session] == .milliseconds(180))
        // The move applies with the next buffer: waited for, or the next one would be folded into it.
        let before = await rig.transport.audioFramesReceived(by: "quick")
        #expect(await eventually { await rig.transport.audioFramesReceived(by: "quick") >= before + 1_323 + 1_764 })
        await rig.transport.reportAudioLatency(0.12, named: "quick")
        #expect(await realigned(after: 1).last == "led into the group by 80 ms (was 180)")
        #expect(await rig.system.groupAudioLeads(on: slow.session) == [quick.session: .milliseconds(80), slow.session: .zero])
        #expect(await rig.system.audioStatistics(on: quick.session)?.groupLeadMicroseconds == 80_000, "what status and AudioGroupLead show")
        #expect(await rig.system.audioStatistics(on: slow.session)?.groupLeadMicroseconds == 0)
        #expect(await writer.value)
        close(acquisition.descriptor)
        #expect(await eventually { await rig.system.audioStatistics(on: slow.session)?.active == false })
        #expect(await eventually { await rig.transport.audioFramesReceived(by: "slow") >= total })
        // 150 ms of silence, 30 ms more, and 100 ms (4 410 frames) of the source left out.
        #expect(await eventually { await rig.transport.audioFramesReceived(by: "quick") >= 6_615 + 1_323 + total - 4_410 })
        let (slowAudio, _) = withoutSilence(await rig.transport.audioReceived(by: "slow"))
        #expect(sameBytes(slowAudio, source), "the slowest member got every sample")
        let (quickAudio, quickSilence) = withoutSilence(await rig.transport.audioReceived(by: "quick"))
        // A writer starved by a loaded machine makes the delivery play silence (counted): every member
        // gets it, so it is taken out here.
        let underrun = Int(await rig.system.audioStatistics(on: slow.session)?.silenceFrames ?? 0)
        #expect(quickSilence - underrun >= 6_615 + 1_323 && quickSilence - underrun < 6_615 + 1_323 + 100, "\(quickSilence), \(underrun) of them underruns")
        #expect(quickAudio.count == (total - 4_410) * 4, "\(quickAudio.count / 4) frames")
        // What it got is the source with one run of 4 410 frames left out.
        let common = zip(quickAudio, source).prefix { $0 == $1 }.count / 4
        #expect(common < total - 4_410, "a run was left out")
        #expect(sameBytes(Array(quickAudio[(common * 4)...]), Array(source[((common + 4_410) * 4)...])), "the rest follows the run left out")
        for loaded in rig.extensions { #expect(await loaded.buffersThroughActor == 0, "each member's buffers went to its receiver") }
    }

    /// The reason of an event that realigned `route` in its group.
    static func realignment(_ event: RouteSystemEvent, of route: ActiveRoute) -> String? {
        if case .routeChanged(let changed, let reason) = event, changed == route, reason.hasPrefix("led into") { return reason }
        return nil
    }

    @Test func aMemberLeavingLeavesTheOthersPlaying() async throws {
        let (rig, quick, slow, writer) = try await Self.playingGroup(frames: 44_100)
        #expect(await eventually { await rig.transport.audioFramesReceived(by: "slow") > 4_410 })
        await rig.system.deactivate(quick.session)
        // A buffer already on its way to the device may still land; after that, nothing does
        // (the writer goes on for most of a second more).
        try await Task.sleep(for: .milliseconds(200))
        let left = await rig.transport.audioFramesReceived(by: "quick")
        #expect(await writer.value, "the writer was not cut off: the group plays on")
        #expect(await eventually { await rig.system.audioStatistics(on: slow.session)?.active == false })
        #expect(await rig.system.audioStatistics(on: slow.session)?.framesReceived == 44_100)
        #expect(await eventually { await rig.transport.audioFramesReceived(by: "slow") >= 44_100 })
        #expect(await rig.transport.audioFramesReceived(by: "quick") == left, "nothing goes to a member that left")
        // A route given twice, or none, is refused.
        await #expect(throws: MediaDeviceError.self) { _ = try await rig.system.acquireGroupAudio(on: [slow.session, slow.session], format: .cdAudio) }
        await #expect(throws: MediaDeviceError.self) { _ = try await rig.system.acquireGroupAudio(on: [], format: .cdAudio) }
    }

    /// A member that released its audio has no say over the group's any more; it comes back
    /// with `joinGroupAudio`, after silence for its lead, and gets the group's buffers again.
    @Test func aMemberThatLeftCannotPauseTheGroupAndRejoinsIt() async throws {
        let (rig, quick, slow, writer) = try await Self.playingGroup(frames: 88_200)
        #expect(await eventually { await rig.transport.audioFramesReceived(by: "quick") > 4_410 })
        await rig.system.stopRealtimeSampleDelivery(on: quick.session)
        await #expect(throws: MediaDeviceError.self) { try await rig.system.pauseAudio(on: quick.session) }
        #expect(await rig.system.isAudioPaused(on: quick.session) == nil)
        #expect(await rig.system.isAudioPaused(on: slow.session) == false, "the group plays on")
        try await Task.sleep(for: .milliseconds(200))
        let beforeRejoining = await rig.transport.audioFramesReceived(by: "quick")

        // Refused: a route joining itself, or a group that does not exist.
        await #expect(throws: MediaDeviceError.self) { _ = try await rig.system.joinGroupAudio(on: slow.session, joining: slow.session) }
        let lead = try await rig.system.joinGroupAudio(on: quick.session, joining: slow.session)
        #expect(lead == .milliseconds(150))
        #expect(await rig.system.isAudioPaused(on: quick.session) == false)
        #expect(await eventually { await rig.transport.audioFramesReceived(by: "quick") > beforeRejoining + 6_615 + 4_410 }, "silence for the lead, then the group's samples")
        // Pausing the member that came back pauses the group.
        try await rig.system.pauseAudio(on: quick.session)
        #expect(await rig.system.isAudioPaused(on: slow.session) == true)
        try await rig.system.resumeAudio(on: slow.session)
        #expect(await writer.value)
        #expect(await eventually { await rig.system.audioStatistics(on: slow.session)?.active == false })
        #expect(await rig.system.audioStatistics(on: slow.session)?.framesReceived == 88_200)
    }

    /// A configured group offset moves a member on the group's timeline: "Quick Speaker" set
    /// 30 ms later is led in by 180 ms; "Slow Speaker" set 100 ms earlier makes it the slowest.
    @Test func groupOffsetsMoveMembersOnTheTimeline() async throws {
        var configuration = RouteSystem.Configuration()
        configuration.groupOffsets = ["Quick Speaker": .milliseconds(30)]
        let (rig, quick, slow) = try await Self.speakers(configuration)
        let (acquisition, leads) = try await rig.system.acquireGroupAudio(on: [quick.session, slow.session], format: .cdAudio)
        close(acquisition.descriptor)
        #expect(leads == [.milliseconds(180), .zero])

        configuration.groupOffsets = ["Slow Speaker": .milliseconds(-100)]
        let earlier = try await Self.speakers(configuration)
        let (acquisition2, leads2) = try await earlier.rig.system.acquireGroupAudio(on: [earlier.quick.session, earlier.slow.session], format: .cdAudio)
        close(acquisition2.descriptor)
        #expect(leads2 == [.milliseconds(250), .zero])
        #expect(acquisition2.latency > .milliseconds(300), "the group's latency counts the earlier device's: \(acquisition2.latency)")
    }

    /// A route that buffers more than a group would play late in it: refused, by name.
    @Test func aSlowerRouteCannotJoinAQuickerGroup() async throws {
        let (rig, quick, slow) = try await Self.speakers()
        await #expect(throws: MediaDeviceError.self) { _ = try await rig.system.joinGroupAudio(on: slow.session, joining: quick.session) }
        let (acquisition, _) = try await rig.system.acquireGroupAudio(on: [quick.session], format: .cdAudio)
        defer { close(acquisition.descriptor) }
        do {
            _ = try await rig.system.joinGroupAudio(on: slow.session, joining: quick.session)
            Issue.record("a slower route joined")
        } catch let error as MediaDeviceError {
            #expect(error.code == .unsupported)
            #expect(error.message.contains("Slow Speaker") && error.message.contains("play late"), "\(error.message)")
        }
    }
}
