import Foundation
import LANTransport
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

/// The box's video on a real DLNA renderer: gmediarender in a namespace fetches the route's
/// H.264 transport stream, decodes it with GStreamer (gstreamer1.0-libav) and shows it into a
/// recorder synced to its pipeline clock; each picture says its number in blocks read back.
@Suite(.serialized, .timeLimit(.minutes(3)), .enabled(if: NamespaceLab.renderersAvailable))
struct LiveVideoRendererTests {
    struct Rig {
        let lab: NamespaceLab
        let renderer: ChildProcess
        let output: VideoOutput
        let audio: TimedOutput
        let system: RouteSystem
        let recorder: EventRecorder
        let name: String
        let logPath: String

        var rendererLog: String { lab.log(logPath) }
    }

    let format = try! VideoFrameFormat(encoding: .i420, width: 320, height: 180, frameRateNumerator: 25)

    func makeRig(name: String, uuid: String) async throws -> Rig {
        let lab = try NamespaceLab()
        let room = lab.rooms[0]
        let output = VideoOutput(framesPath: lab.path("video.gray"), timesPath: lab.path("video-times.txt"), width: format.width, height: format.height)
        let audio = TimedOutput(pcmPath: lab.path("audio.pcm"), timesPath: lab.path("audio-times.txt"))
        let renderer = try lab.gmediarender(in: room, name: name, uuid: uuid, recording: audio, video: output)
        let system = RouteSystem()
        let transport = Lab.transport(lab)
        try await system.load { manager in
            UPnPRendererExtension(
                transport: transport, routingManager: manager, configuration: UPnPRendererExtension.Configuration(pollInterval: .milliseconds(300)),
                logger: Lab.logger)
        }
        await system.beginDiscovery(client: "test")
        return Rig(
            lab: lab, renderer: renderer, output: output, audio: audio, system: system, recorder: await EventRecorder(system), name: name,
            logPath: "gmediarender-\(room.inside).log")
    }

    func device(_ rig: Rig) async throws -> SystemDevice {
        let found = await eventually(timeout: .seconds(15)) {
            await rig.system.devicesList.contains { $0.displayName == rig.name && $0.capabilities.contains(.realtimeVideoStreaming) }
        }
        let listed = await rig.system.devicesList.map { "\($0.displayName) \($0.capabilities)" }
        #expect(found, "the renderer is listed as taking real-time video: \(listed)")
        return try #require(await rig.system.devicesList.first { $0.displayName == rig.name })
    }

    /// What the renderer showed, once picture `last` was shown and nothing more came for half a second.
    func settled(_ rig: Rig, last: Int, within timeout: Duration) async throws -> [(number: Int?, time: Double)] {
        var shown = rig.output.frames()
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(500))
            let now = rig.output.frames()
            if now.count == shown.count, now.contains(where: { $0.number == last }) { break }
            shown = now
        }
        return shown
    }

    /// The numbers shown, a picture shown several times in a row counted once.
    static func numbers(_ shown: [(number: Int?, time: Double)]) -> [Int] {
        var numbers: [Int] = []
        for frame in shown { if let number = frame.number, numbers.last != number { numbers.append(number) } }
        return numbers
    }

    @Test func picturesWrittenAreShownInOrderWithTheirNumbers() async throws {
        let rig = try await makeRig(name: "Lounge TV", uuid: "0a1b2c3d-0000-4000-8000-000000000060")
        let device = try await device(rig)
        let route = try await rig.system.activate(deviceID: device.id)
        let acquisition = try await rig.system.acquireVideo(on: route.session, format: format)
        let count = 150
        let written = try #require(await writePicturesOnOwnThread(0..<count, format: format, to: acquisition.descriptor, period: format.frameDuration).value)
        // The renderer shows what it was sent, then stops recording.
        let shown = try await settled(rig, last: count - 1, within: .seconds(15))
        // Each number once (a picture shown twice — repeated by the pacer — counts once), in order.
        let numbers = Self.numbers(shown)
        let unreadable = shown.filter { $0.number == nil }.count
        #expect(numbers == numbers.sorted(), "in order: \(numbers.prefix(40))")
        // Every picture the pacer sent (all but those a late writer thread made it drop, counted) is shown.
        let dropped = Int(try #require(await rig.system.videoStatistics(on: route.session)).framesDropped)
        #expect(dropped <= count / 10, "\(dropped) dropped by the pacer")
        #expect(Set(numbers).count >= (count - dropped) * 99 / 100, "\(Set(numbers).count) of \(count) pictures shown, missing \(Set(0..<count).subtracting(numbers).sorted()); \(unreadable) unreadable; renderer: \(rig.rendererLog.suffix(600))")
        let latencies = shown.compactMap { frame -> Double? in frame.number.flatMap { written[$0] }.map { frame.time - $0 } }.sorted()
        if !latencies.isEmpty {
            print("video latency from write to shown: median \(Int(latencies[latencies.count / 2] * 1000)) ms, worst \(Int(latencies.last! * 1000)) ms")
        }
        let statistics = try #require(await rig.system.routeStatus(on: route.session)?.video)
        #expect(statistics.framesReceived == UInt64(count))
        #expect(statistics.codec == "H.264 in MPEG-TS")
        #expect(await eventually(timeout: .seconds(5)) { await rig.system.videoStatistics(on: route.session)?.active == false })
        await rig.system.deactivate(route.session)
        await rig.system.shutdown()
    }

    /// Audio first, then video on the same route: the video's stream carries the route's audio
    /// (one AVTransport plays one stream), and when the video ends the renderer is loaded with
    /// the audio stream again. The tone comes out during the video and after it; the gaps at
    /// both switches are measured from the output's own clock.
    @Test func theRoutesAudioPlaysInTheVideoAndAloneAgainAfterIt() async throws {
        let rig = try await makeRig(name: "Family TV", uuid: "0a1b2c3d-0000-4000-8000-000000000064")
        let device = try await device(rig)
        let route = try await rig.system.activate(deviceID: device.id)
        let sound = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let audioWriter = writeOnOwnThread(tone(seconds: 12), to: sound.descriptor, piece: 4_096)
        #expect(await eventually(timeout: .seconds(10)) { rig.audio.pcm.count > 44_100 * 4 }, "the tone plays alone first: \(rig.rendererLog.suffix(600))")
        let videoStart = SampleBuffer.clockNow()
        let acquisition = try await rig.system.acquireVideo(on: route.session, format: format)
        let count = 100
        #expect(await writePicturesOnOwnThread(0..<count, format: format, to: acquisition.descriptor, period: format.frameDuration).value != nil)
        let videoEnd = SampleBuffer.clockNow()
        #expect(await audioWriter.value)
        #expect(await eventually(timeout: .seconds(10)) { await rig.system.audioStatistics(on: route.session)?.active == false })
        try await Task.sleep(for: .seconds(2))
        // The pictures, in order, with the audio beside them.
        let numbers = Self.numbers(rig.output.frames())
        #expect(numbers == numbers.sorted() && Set(numbers).count >= count * 95 / 100, "\(Set(numbers).count) of \(count) shown")
        // The output's clock: where each read's frames would have started had nothing stopped; a
        // jump in it is a gap in the sound.
        let reads: [(time: Double, frames: Double)] = ((try? String(contentsOfFile: rig.audio.timesPath, encoding: .utf8)) ?? "")
            .split(separator: "\n").compactMap { line in
                let fields = line.split(separator: " ")
                guard fields.count == 2, let time = Double(fields[0]), let bytes = Double(fields[1]) else { return nil }
                return (time, bytes / 4)
            }
        let gaps = zip(reads.dropFirst(), reads).map { next, previous in
            (at: next.time, seconds: (next.time - next.frames / 44_100) - (previous.time - previous.frames / 44_100))
        }
        // Each gap over 20 ms by when it came: at the switch to the video's stream, or back.
        let start = Double(videoStart / .microseconds(1)) / 1e6, end = Double(videoEnd / .microseconds(1)) / 1e6
        let lost = gaps.filter { $0.seconds > 0.02 }
        let toVideo = lost.filter { abs($0.at - start) < 2 }.map(\.seconds).reduce(0, +)
        let back = lost.filter { abs($0.at - end) < 2 }.map(\.seconds).reduce(0, +)
        let described = lost.map { String(format: "%.0f ms at %+.1f s from the video's start", $0.seconds * 1000, $0.at - start) }
        print(String(format: "audio lost switching to the video's stream: %.0f ms; back to the audio stream: %.0f ms; all gaps: ", toVideo * 1000, back * 1000) + "\(described)")
        #expect(back < 1, "the audio-only reload costs under a second: \(described)")
        #expect(lost.map(\.seconds).reduce(0, +) < 1.5, "\(described)")
        // The tone throughout: 12 s written, at least 10 s of it heard (the two switches cost the rest).
        let heard = rig.audio.pcm.count / 4
        #expect(heard > 44_100 * 10, "\(heard) frames heard")
        #expect(correlationWithTone(leftChannel(rig.audio.pcm)) > 0.95)
        await rig.system.deactivate(route.session)
        await rig.system.shutdown()
    }

    /// `AcquireVideo("h264", …)`: an app's own H.264 (libx264, several slices a picture) goes to
    /// the renderer as written, paced by the delivery (the writer writes it all at once).
    @Test func anAppsH264IsShownInOrderWithoutTheBoxsEncoder() async throws {
        let rig = try await makeRig(name: "Encoded TV", uuid: "0a1b2c3d-0000-4000-8000-000000000063")
        let device = try await device(rig)
        let route = try await rig.system.activate(deviceID: device.id)
        let encoded = try VideoFrameFormat(encoding: .h264, width: format.width, height: format.height, frameRateNumerator: 25)
        let count = 100
        let stream = try VideoTestPattern.h264(0..<count, format: encoded, intraPeriod: 25)
        let acquisition = try await rig.system.acquireVideo(on: route.session, format: encoded)
        #expect(await writeOnOwnThread(stream, to: acquisition.descriptor, piece: 4096).value)
        let shown = try await settled(rig, last: count - 1, within: .seconds(20))
        let numbers = Self.numbers(shown)
        #expect(numbers == numbers.sorted(), "in order: \(numbers.prefix(40))")
        #expect(Set(numbers).count >= count * 99 / 100, "\(Set(numbers).count) of \(count) shown, missing \(Set(0..<count).subtracting(numbers).sorted()); renderer: \(rig.rendererLog.suffix(600))")
        // Shown at the declared rate, not as fast as they were written: 100 pictures over about 4 s.
        if let first = shown.first(where: { $0.number == 0 }), let last = shown.first(where: { $0.number == count - 1 }) {
            #expect(last.time - first.time > 3.5, "\(last.time - first.time) s from the first picture to the last")
        }
        #expect(await eventually(timeout: .seconds(5)) { await rig.system.videoStatistics(on: route.session)?.active == false })
        let statistics = try #require(await rig.system.videoStatistics(on: route.session))
        #expect(statistics.framesReceived == UInt64(count) && statistics.framesSent == UInt64(count) && statistics.framesDropped == 0)
        #expect(statistics.codec == "H.264 (the app's) in MPEG-TS" && statistics.failure == nil)
        await rig.system.deactivate(route.session)
        await rig.system.shutdown()
    }

    @Test func aRendererKilledMidStreamEndsTheVideoWithAnEventAndClosesTheWriter() async throws {
        let rig = try await makeRig(name: "Hall TV", uuid: "0a1b2c3d-0000-4000-8000-000000000061")
        let device = try await device(rig)
        let route = try await rig.system.activate(deviceID: device.id)
        let acquisition = try await rig.system.acquireVideo(on: route.session, format: format)
        let writer = writePicturesOnOwnThread(0..<750, format: format, to: acquisition.descriptor, period: format.frameDuration)
        #expect(await eventually(timeout: .seconds(10)) { rig.output.frames().count > 25 }, "it shows first: \(rig.rendererLog.suffix(600))")
        rig.renderer.kill(SIGKILL)
        let ended = await rig.recorder.first(timeout: .seconds(15)) { event -> Bool? in
            switch event {
            case .routeDeactivated(let ended, _) where ended.session == route.session: true
            case .sessionEnded(let ended, _) where ended.session == route.session: true
            default: nil
            }
        }
        #expect(ended == true, "the route's video ended with an event")
        #expect(await writer.value == nil, "the writer's socket closed under it")
        #expect(await rig.system.videoStatistics(on: route.session)?.active != true)
        await rig.system.shutdown()
    }

    /// A renderer that stops fetching for a while (stopped with SIGSTOP) costs the box no more
    /// memory than the stream's backlog, and the writer is never held up; when it reads again
    /// it is shown pictures of then, in order.
    @Test func aRendererThatStopsFetchingForAWhileShowsPicturesOfNowAfter() async throws {
        let rig = try await makeRig(name: "Study TV", uuid: "0a1b2c3d-0000-4000-8000-000000000062")
        let device = try await device(rig)
        let route = try await rig.system.activate(deviceID: device.id)
        let acquisition = try await rig.system.acquireVideo(on: route.session, format: format)
        let writer = writePicturesOnOwnThread(0..<250, format: format, to: acquisition.descriptor, period: format.frameDuration)
        #expect(await eventually(timeout: .seconds(10)) { rig.output.frames().count > 25 }, "it shows first: \(rig.rendererLog.suffix(600))")
        rig.renderer.kill(SIGSTOP)
        try await Task.sleep(for: .seconds(3))
        rig.renderer.kill(SIGCONT)
        let written = try #require(await writer.value, "the writer was never held up long enough to fail")
        #expect(written.count == 250)
        // The writer's last picture may still be in the socket: the counts once the delivery ended.
        #expect(await eventually(timeout: .seconds(5)) { await rig.system.videoStatistics(on: route.session)?.active == false })
        let statistics = try #require(await rig.system.videoStatistics(on: route.session))
        #expect(statistics.framesReceived == 250)
        // After the stop the renderer goes on in order (what it had read, then the stream's newer pictures).
        try await Task.sleep(for: .seconds(3))
        let numbers = Self.numbers(rig.output.frames())
        #expect(numbers == numbers.sorted(), "in order")
        #expect((numbers.last ?? 0) > 150, "pictures of after the stop are shown: last \(numbers.last ?? -1)")
        await rig.system.deactivate(route.session)
        await rig.system.shutdown()
    }
}
