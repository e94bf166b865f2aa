import Foundation
import LANTransport
import LiveStreaming
import MediaDevice
import MediaRouteTestSupport
import MediaRouteTesting
import RouteSystem
import RoutingModel
import Testing
import UPnPRendererExtension
#if canImport(Glibc)
import Glibc
#endif

/// The box's own audio to a real DLNA renderer: gmediarender in a namespace fetches the
/// route's live stream and plays it into a recorder that syncs to its pipeline clock.
@Suite(.serialized, .timeLimit(.minutes(3)), .enabled(if: NamespaceLab.renderersAvailable))
struct LiveRendererTests {
    struct Rig {
        let lab: NamespaceLab
        let room: NamespaceLab.Room
        let renderer: ChildProcess
        let output: TimedOutput
        let system: RouteSystem
        let recorder: EventRecorder
        let name: String

        var rendererLog: String { lab.log("gmediarender-\(room.inside).log") }
    }

    func makeRig(name: String, uuid: String, configure: (inout UPnPRendererExtension.Configuration) -> Void = { _ in }) async throws -> Rig {
        let lab = try NamespaceLab()
        let room = lab.rooms[0]
        let output = TimedOutput(pcmPath: lab.path("out.pcm"), timesPath: lab.path("times.txt"))
        let renderer = try lab.gmediarender(in: room, name: name, uuid: uuid, recording: output)
        var configuration = UPnPRendererExtension.Configuration(pollInterval: .milliseconds(300))
        configure(&configuration)
        let system = RouteSystem()
        let transport = Lab.transport(lab)
        let extensionConfiguration = configuration
        try await system.load { manager in
            UPnPRendererExtension(transport: transport, routingManager: manager, configuration: extensionConfiguration, logger: Lab.logger)
        }
        await system.beginDiscovery(client: "test")
        return Rig(lab: lab, room: room, renderer: renderer, output: output, system: system, recorder: await EventRecorder(system), name: name)
    }

    func device(_ rig: Rig) async throws -> SystemDevice {
        let found = await eventually(timeout: .seconds(15)) {
            await rig.system.devicesList.contains { $0.displayName == rig.name && $0.capabilities.contains(.realtimeAudioStreaming) }
        }
        let listed = await rig.system.devicesList.map { "\($0.displayName) \($0.capabilities)" }
        #expect(found, "the renderer is listed as taking real-time audio: \(listed)")
        return try #require(await rig.system.devicesList.first { $0.displayName == rig.name })
    }

    /// More than `seconds` of the test tone came out of the renderer, intact.
    func expectTone(seconds: Int, from rig: Rig) async {
        let heard = await eventually(timeout: .seconds(15)) { leftChannel(rig.output.pcm).filter { abs($0) > 50 }.count > 44_100 * seconds }
        let received = leftChannel(rig.output.pcm)
        #expect(heard, "\(received.filter { abs($0) > 50 }.count) samples above the floor; renderer: \(rig.rendererLog.suffix(800))")
        let correlation = correlationWithTone(received)
        #expect(correlation >= 0.99, "cross-correlation \(correlation)")
    }

    @Test func aToneStreamedLiveComesOutOfTheRendererIntact() async throws {
        let rig = try await makeRig(name: "Den Renderer", uuid: "0a1b2c3d-0000-4000-8000-000000000020")
        let device = try await device(rig)
        let route = try await rig.system.activate(deviceID: device.id)
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        // gmediarender's calibrated latency (by its model name), 80 ms more for delivery's batches
        // of 100 ms (its delivery figures were measured at 20), and delivery's own with the writer's deeper socket.
        #expect(acquisition.latency >= .milliseconds(100) && acquisition.latency < .milliseconds(600), "\(acquisition.latency)")
        let writer = writeOnOwnThread(tone(seconds: 6), to: acquisition.descriptor, piece: 4_096)
        #expect(await eventually { await rig.system.routeStatus(on: route.session)?.details.codec != nil })
        // gmediarender lists audio/L16 at 44.1 kHz stereo: the lowest-latency encoding, DLNA's LPCM.
        let status = await rig.system.routeStatus(on: route.session)
        #expect(status?.details.codec == "LPCM" && status?.details.bitrate == 1_411_200, "\(String(describing: status?.details))")
        // Its calibrated latency, found by its model name (the middle of its cold and warm starts).
        #expect(status?.details.declaredLatencyMicroseconds == 30_000)
        #expect(await writer.value)
        // Six seconds of tone played out.
        await expectTone(seconds: 5, from: rig)
        #expect(await eventually(timeout: .seconds(10)) { await rig.system.audioStatistics(on: route.session)?.active == false })
        await rig.system.deactivate(route.session)
        await rig.system.shutdown()
    }

    /// gmediarender's positions (whole seconds, polled with a dither) reach the stream's clock
    /// estimate. It plays on this host's clock, and whole seconds over a few seconds say little:
    /// the bounds are loose here, and the estimator's own tests measure what hours of such
    /// positions give (PlayoutRateEstimatorTests).
    @Test func theRenderersPositionsReachTheClockEstimate() async throws {
        let rig = try await makeRig(name: "Attic Renderer", uuid: "0a1b2c3d-0000-4000-8000-000000000026") {
            $0.live.drift = PlayoutRateEstimator.Configuration(minimumSpan: .seconds(6), maximumUncertainty: 1e6, plausibleRange: 1e6, maximumTrim: 0)
        }
        let device = try await device(rig)
        let route = try await rig.system.activate(deviceID: device.id)
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let writer = writeOnOwnThread(tone(seconds: 14), to: acquisition.descriptor, piece: 4_096)
        let measured = await eventually(timeout: .seconds(16)) { await rig.system.routeStatus(on: route.session)?.details.deviceClockPPM != nil }
        let details = await rig.system.routeStatus(on: route.session)?.details
        #expect(measured, "\(String(describing: details))")
        let rate = try #require(details?.deviceClockPPM)
        // Whole seconds over six: a quarter either way at worst.
        #expect(abs(rate) < 250_000, "\(rate) ppm")
        #expect(details?.timelineOffsetMicroseconds != nil)
        _ = await writer.value
        await rig.system.deactivate(route.session)
        await rig.system.shutdown()
    }

    /// The renderer is told to play when the app acquires the route's audio, before any sample;
    /// an app that writes only later (here after the prepared wait of 1 s; gmediarender's own HTTP
    /// source gives up after about 15 s, silently) finds it stopped and started again, and is heard.
    @Test func anAppThatWritesLateIsHeardAllTheSame() async throws {
        let rig = try await makeRig(name: "Late Renderer", uuid: "0a1b2c3d-0000-4000-8000-000000000027") { $0.live.preparedWait = .seconds(1) }
        let device = try await device(rig)
        let route = try await rig.system.activate(deviceID: device.id)
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        // Started at once: the renderer fetched the stream before the first sample.
        #expect(await eventually(timeout: .seconds(5)) { await rig.system.routeStatus(on: route.session)?.details.codec == "LPCM" })
        try await Task.sleep(for: .seconds(3))
        let writer = writeOnOwnThread(tone(seconds: 4), to: acquisition.descriptor, piece: 4_096)
        #expect(await writer.value)
        await expectTone(seconds: 3, from: rig)
        await rig.system.deactivate(route.session)
        await rig.system.shutdown()
    }

    /// A 5 s tone in `encoding`, forced by the box's `live-formats`, comes out of gmediarender intact.
    func expectToneIntact(as encoding: LiveAudioEncoding, name: String, uuid: String) async throws {
        let rig = try await makeRig(name: name, uuid: uuid) { $0.live.forcedEncodings[name] = encoding }
        let device = try await device(rig)
        let route = try await rig.system.activate(deviceID: device.id)
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let writer = writeOnOwnThread(tone(seconds: 5), to: acquisition.descriptor, piece: 4_096)
        #expect(await eventually { await rig.system.routeStatus(on: route.session)?.details.codec == encoding.codecName })
        #expect(await writer.value)
        await expectTone(seconds: 4, from: rig)
        await rig.system.deactivate(route.session)
        await rig.system.shutdown()
    }

    /// The other format gmediarender lists: WAV, forced by the box's `live-formats`.
    @Test func aToneStreamedAsWAVComesOutIntactToo() async throws {
        try await expectToneIntact(as: .wav, name: "Den WAV Renderer", uuid: "0a1b2c3d-0000-4000-8000-000000000023")
    }

    /// FLAC, for renderers that list no PCM (forced here: gmediarender takes all three), encoded
    /// by FFmpeg's encoder and decoded by the renderer's GStreamer: the tone comes out intact.
    @Test func aToneStreamedAsFLACComesOutIntact() async throws {
        try await expectToneIntact(as: .flac, name: "Den FLAC Renderer", uuid: "0a1b2c3d-0000-4000-8000-000000000024")
    }

    /// MP3, for renderers that list only `audio/mpeg` (forced here), encoded by LAME through
    /// FFmpeg and decoded by the renderer's GStreamer: the tone comes out intact.
    @Test func aToneStreamedAsMP3ComesOutIntact() async throws {
        try await expectToneIntact(as: .mp3, name: "Den MP3 Renderer", uuid: "0a1b2c3d-0000-4000-8000-000000000025")
    }

    /// AAC in ADTS, for renderers that list `audio/aac` (forced here), encoded by FFmpeg's native
    /// encoder and decoded by the renderer's GStreamer (faad): the tone comes out intact.
    @Test func aToneStreamedAsAACComesOutIntact() async throws {
        try await expectToneIntact(as: .aac, name: "Den AAC Renderer", uuid: "0a1b2c3d-0000-4000-8000-000000000026")
    }

    @Test func aRendererKilledMidStreamEndsTheRouteWithAnEvent() async throws {
        let rig = try await makeRig(name: "Hall Renderer", uuid: "0a1b2c3d-0000-4000-8000-000000000021")
        let device = try await device(rig)
        let route = try await rig.system.activate(deviceID: device.id)
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let writer = writeOnOwnThread(tone(seconds: 30), to: acquisition.descriptor, piece: 4_096, closing: false)
        #expect(await eventually(timeout: .seconds(10)) { rig.output.pcm.count > 44_100 * 4 }, "it plays first: \(rig.rendererLog.suffix(600))")
        rig.renderer.kill(SIGKILL)
        let ended = await rig.recorder.first(timeout: .seconds(15)) { event -> Bool? in
            switch event {
            case .routeDeactivated(let ended, _) where ended.session == route.session: true
            case .sessionEnded(let ended, _) where ended.session == route.session: true
            default: nil
            }
        }
        #expect(ended == true, "the route's audio ended with an event")
        #expect(await writer.value == false, "the writer's socket closed under it")
        close(acquisition.descriptor)
        await rig.system.shutdown()
    }

    @Test func aRendererThatNeverFetchesFailsTheRouteWithinTheFetchTimeout() async throws {
        let rig = try await makeRig(name: "Attic Renderer", uuid: "0a1b2c3d-0000-4000-8000-000000000022") { $0.live.fetchTimeout = .seconds(3) }
        let device = try await device(rig)
        // The renderer answers control requests but can open no connection of its own.
        try NamespaceLab.ip(["netns", "exec", rig.room.namespace, "iptables", "-A", "OUTPUT", "-p", "tcp", "--syn", "-j", "DROP"])
        let route = try await rig.system.activate(deviceID: device.id)
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let writer = writeOnOwnThread(tone(seconds: 30), to: acquisition.descriptor, piece: 4_096, closing: false)
        let started = ContinuousClock.now
        let reason = await rig.recorder.first(timeout: .seconds(15)) { event -> MediaDeviceError? in
            if case .sessionEnded(let ended, let reason?) = event, ended.session == route.session { return reason }
            return nil
        }
        #expect(reason?.code == .timedOut, "\(String(describing: reason))")
        #expect(reason?.message.contains("did not fetch the live stream") == true)
        #expect(ContinuousClock.now - started < .seconds(12))
        #expect(await writer.value == false, "the writer's socket closed under it")
        close(acquisition.descriptor)
        await rig.system.shutdown()
    }

    /// rygel's Playbin renderer (GStreamer's playbin, as many Linux renderers are) takes the
    /// live stream too: what it lists decides the format, and its output is the tone.
    @Test func rygelsPlaybinRendererPlaysTheLiveStream() async throws {
        let lab = try NamespaceLab()
        let room = lab.rooms[0]
        let recording = lab.path("rygel.pcm")
        try lab.rygel(in: room, title: "Loft Renderer", recording: recording)
        let system = RouteSystem()
        let transport = Lab.transport(lab)
        try await system.load { manager in UPnPRendererExtension(transport: transport, routingManager: manager, logger: Lab.logger) }
        await system.beginDiscovery(client: "test")
        let found = await eventually(timeout: .seconds(20)) {
            await system.devicesList.contains { $0.displayName == "Loft Renderer" && $0.capabilities.contains(.realtimeAudioStreaming) }
        }
        let listed = await system.devicesList.map { "\($0.displayName) \($0.capabilities)" }
        #expect(found, "rygel is listed as taking real-time audio: \(listed); \(lab.log("rygel-\(room.inside).log").suffix(600))")
        let device = try #require(await system.devicesList.first { $0.displayName == "Loft Renderer" })
        let route = try await system.activate(deviceID: device.id)
        let acquisition = try await system.acquireAudio(on: route.session, format: .cdAudio)
        let writer = writeOnOwnThread(tone(seconds: 5), to: acquisition.descriptor, piece: 4_096)
        #expect(await eventually { await system.routeStatus(on: route.session)?.details.codec != nil })
        let codec = await system.routeStatus(on: route.session)?.details.codec
        #expect(await writer.value)
        @Sendable func pcm() -> [UInt8] { (try? [UInt8](Data(contentsOf: URL(fileURLWithPath: recording)))) ?? [] }
        let heard = await eventually(timeout: .seconds(15)) { leftChannel(pcm()).filter { abs($0) > 50 }.count > 44_100 * 4 }
        let received = leftChannel(pcm())
        #expect(heard, "\(codec ?? "no codec"): \(received.filter { abs($0) > 50 }.count) samples above the floor; \(lab.log("rygel-\(room.inside).log").suffix(600))")
        let correlation = correlationWithTone(received)
        #expect(correlation >= 0.99, "\(codec ?? "no codec"): cross-correlation \(correlation)")
        await system.deactivate(route.session)
        await system.shutdown()
    }
}

/// The lab's own promise: a test that ends early leaves no process behind.
@Suite(.serialized, .timeLimit(.minutes(1)), .enabled(if: NamespaceLab.renderersAvailable))
struct NamespaceLabCleanupTests {
    /// Every process whose command line names `text` (the lab's directory is unique to it).
    static func processes(naming text: String) -> [String] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.filter { $0.allSatisfy(\.isNumber) }.compactMap { pid -> String? in
            guard let raw = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return nil }
            let line = String(decoding: raw.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
            return line.contains(text) ? "\(pid): \(line)" : nil
        }
    }

    /// A recording gmediarender never asked to play: the recorder its shell started in the
    /// background waits on the FIFO for a writer that never comes. The lab's end kills it too.
    @Test func aRecordingRendererThatNeverPlayedLeavesNoProcessBehind() throws {
        var lab: NamespaceLab? = try NamespaceLab()
        let directory = try #require(lab).path("")
        let output = TimedOutput(pcmPath: try #require(lab).path("renderer.pcm"), timesPath: try #require(lab).path("renderer-times.txt"))
        try #require(lab).gmediarender(in: try #require(lab).rooms[0], name: "Den Renderer", uuid: "0a1b2c3d-0000-4000-8000-000000000039", recording: output)
        #expect(!Self.processes(naming: directory).isEmpty, "the renderer and its recorder run")
        lab = nil
        var left = Self.processes(naming: directory)
        for _ in 0..<100 where !left.isEmpty {
            usleep(20_000)
            left = Self.processes(naming: directory)
        }
        #expect(left.isEmpty, "left behind: \(left)")
    }
}
