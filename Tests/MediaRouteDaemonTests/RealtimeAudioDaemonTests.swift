import DBus
import Foundation
import MediaDevice
import RoutingModel
import MediaRouteBusAPI
import MediaRouteClient
import MediaRouteCommands
import MediaRouteTestSupport
import SystemRouting
import Testing
import MediaRouteTesting

/// The speaker's route through a client of `daemon`.
private func speakerRoute(_ daemon: RunningDaemon) async throws -> (DBusConnection, SystemRouteController, SystemRoute) {
    let (connection, _, controller) = try await client(daemon, agent: ScriptedPairingAgent([]))
    let picker = controller.makePicker(prioritizesVideoDevices: false)
    await picker.open()
    #expect(await eventually { await picker.entries().contains { $0.displayName == "Kitchen Speaker" } })
    let route = try await picker.pick(try #require(await picker.entries().first { $0.displayName == "Kitchen Speaker" }))
    await picker.close()
    return (connection, controller, route)
}

/// A WAV file of `frames` ramp frames (stereo S16 at 44.1 kHz) in a new temporary directory.
private func wavFile(frames: Int) throws -> String {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mediaroute-stream-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let samples = rampFrames(frames)
    func le32(_ value: Int) -> [UInt8] { (0..<4).map { UInt8((value >> (8 * $0)) & 0xFF) } }
    let fmt: [UInt8] = [1, 0, 2, 0] + le32(44_100) + le32(44_100 * 4) + [4, 0, 16, 0]
    let body = Array("WAVEfmt ".utf8) + le32(16) + fmt + Array("data".utf8) + le32(samples.count) + samples
    let path = directory.appendingPathComponent("ramp.wav").path
    try Data(Array("RIFF".utf8) + le32(body.count) + body).write(to: URL(fileURLWithPath: path))
    return path
}

@Suite(.timeLimit(.minutes(1)), .enabled(if: PrivateBus.isAvailable), .serialized) struct RealtimeAudioDaemonTests {
    @Test func samplesGoThroughTheDaemonAsInProcess() async throws {
        let daemon = try await RunningDaemon()
        let (_, _, route) = try await speakerRoute(daemon)
        do {
            _ = try await route.acquireAudio(format: SampleBuffer.Format(encoding: .pcmS16LE, sampleRate: 22_050, channels: 2))
            Issue.record("22.05 kHz was accepted")
        } catch let error as MediaDeviceError {
            #expect(error.code == .unsupported, "\(error)")
            #expect(error.message.contains("44100 or 48000 Hz"), "\(error.message)")
        }
        let sink = try await route.startRealtimeSampleDelivery()
        let source = rampFrames(13_230)
        for start in stride(from: 0, to: source.count, by: 1_764) {
            let data = Array(source[start..<min(start + 1_764, source.count)])
            try await sink.send(SampleBuffer(format: .cdAudio, presentationTime: .zero, frameCount: data.count / 4, data: data))
        }
        let latency = try #require(await sink.acquisition?.latency)
        #expect(latency >= .milliseconds(10), "the reply says what the route adds")
        await sink.finish()
        // Through the bus too, the end is a signal (PropertiesChanged of the Audio* properties),
        // which the client turns into the routing system's `audioEnded`: nothing polls.
        let ended = try #require(await route.audioEnded(within: .seconds(10)))
        #expect(ended.active == false && ended.framesReceived == 13_230, "\(ended)")
        let statistics = try #require(await route.audioStatistics())
        #expect(statistics.format == .cdAudio)
        #expect(statistics.framesReceived == 13_230)
        #expect(statistics.framesDelivered == 13_230 + statistics.silenceFrames)
        #expect(statistics.framesDropped == 0)
        // The same numbers for anyone on the bus.
        let path = DaemonNames.sessionPath(route.session).description
        let received = try await daemon.gdbus(["--object-path", path, "--method", "org.freedesktop.DBus.Properties.Get", DaemonNames.session, "AudioFramesReceived"])
        #expect(received.contains("13230"), "\(received)")
        let format = try await daemon.gdbus(["--object-path", path, "--method", "org.freedesktop.DBus.Properties.Get", DaemonNames.session, "AudioFormat"])
        #expect(format.contains("s16le/44100/2"), "\(format)")
    }

    @Test func mediaroutectlPausesAndResumesRealTimeAudio() async throws {
        let daemon = try await RunningDaemon()
        let (_, _, route) = try await speakerRoute(daemon)
        let acquisition = try await route.acquireAudio(format: .cdAudio)
        let descriptor = acquisition.descriptor
        // Two seconds: the writer blocks while the route is paused.
        let writer = writeOnOwnThread(rampFrames(88_200), to: descriptor, piece: 1_764)
        #expect(await eventually { (await route.audioStatistics()?.framesDelivered ?? 0) > 4_410 })
        let pause = RecordingConsole()
        try await MediaRouteCtl.Pause.parse(["--to", "Kitchen Speaker", "--bus", daemon.bus.address]).run(console: pause)
        #expect(pause.lines.last == "Kitchen Speaker: paused", "\(pause.lines)")
        try await Task.sleep(for: .milliseconds(300))
        let held = await route.audioStatistics()
        try await Task.sleep(for: .milliseconds(500))
        let later = await route.audioStatistics()
        #expect(held?.framesDelivered == later?.framesDelivered, "nothing is delivered while paused")
        #expect(held?.framesReceived == later?.framesReceived, "nothing is read: the writer waits")
        #expect((later?.framesReceived ?? 0) < 88_200)
        let resume = RecordingConsole()
        try await MediaRouteCtl.Resume.parse(["--to", "Kitchen Speaker", "--bus", daemon.bus.address]).run(console: resume)
        #expect(resume.lines.last == "Kitchen Speaker: playing", "\(resume.lines)")
        #expect(await writer.value)
        #expect(await eventually(timeout: .seconds(5)) { await route.audioStatistics()?.active == false })
        let statistics = try #require(await route.audioStatistics())
        #expect(statistics.framesReceived == 88_200)
        #expect(statistics.framesDropped == 0)
        // A pause with no audio is a typed error, not a crash or a silent success.
        let again = RecordingConsole()
        await #expect(throws: (any Error).self) {
            try await MediaRouteCtl.Pause.parse(["--to", "Kitchen Speaker", "--bus", daemon.bus.address]).run(console: again)
        }
    }

    @Test func setNowPlayingTakesMetadataAndRefusesWhatIsNotAnImage() async throws {
        let daemon = try await RunningDaemon()
        let (_, _, route) = try await speakerRoute(daemon)
        let path = DaemonNames.sessionPath(route.session).description
        let method = "\(DaemonNames.session).SetNowPlaying"
        _ = try await daemon.gdbus(["--object-path", path, "--method", method, "{'title': <'Song'>, 'duration': <3.5>, 'position': <0.0>}"])
        do {
            _ = try await daemon.gdbus(["--object-path", path, "--method", method, "{'artwork': <[byte 1, 2, 3]>}"])
            Issue.record("bytes that are no image were taken as artwork")
        } catch {
            #expect("\(error)".contains("JPEG or PNG"), "\(error)")
        }
        do {
            _ = try await daemon.gdbus(["--object-path", path, "--method", method, "{'position': <-1.0>}"])
            Issue.record("a negative position was taken")
        } catch {
            #expect("\(error)".contains("position"), "\(error)")
        }
        // Through the client library too.
        try await route.setNowPlaying(RealtimeNowPlaying(metadata: PlaybackMetadata(title: "Song"), position: 1))
    }

    @Test func aClientLeavingTheBusEndsItsStream() async throws {
        let daemon = try await RunningDaemon()
        let (connection, _, route) = try await speakerRoute(daemon)
        let acquisition = try await route.acquireAudio(format: .cdAudio)
        defer { close(acquisition.descriptor) }
        #expect(writeBlocking(rampFrames(441), to: acquisition.descriptor, piece: 1_764))
        #expect(await eventually { await route.audioStatistics()?.framesReceived == 441 })
        connection.close()
        let probe: [UInt8] = [1, 2, 3, 4]
        #expect(await eventually {
            probe.withUnsafeBytes { send(acquisition.descriptor, $0.baseAddress!, 4, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) } < 0 && errno == EPIPE
        }, "the daemon closed its end")
        let watcher = try await DBusConnection.connect(to: .address(daemon.bus.address))
        let active = try await watcher.call(
            destination: DaemonNames.busName, path: DaemonNames.sessionPath(route.session), interface: "org.freedesktop.DBus.Properties",
            member: "Get", [.string(DaemonNames.session), .string("AudioActive")])
        #expect(active.first?.bool == false)
    }

    @Test func mediaroutectlStreamsAWAVFileThroughTheDaemon() async throws {
        let daemon = try await RunningDaemon()
        let path = try wavFile(frames: 8_820)
        defer { try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path) }
        let stream = RecordingConsole()
        try await MediaRouteCtl.Stream.parse([path, "--to", "Kitchen Speaker", "--keep", "--bus", daemon.bus.address]).run(console: stream)
        #expect(stream.lines.contains { $0.hasPrefix("Streaming s16le/44100/2 to Kitchen Speaker (latency ") }, "\(stream.lines)")
        #expect(stream.lines.last == "Ended.")
        let status = RecordingConsole()
        try await MediaRouteCtl.Status.parse(["--json", "--bus", daemon.bus.address]).run(console: status)
        let report = try JSONSerialization.jsonObject(with: Data(status.lines.joined(separator: "\n").utf8)) as? [String: Any]
        let routes = report?["routes"] as? [[String: Any]]
        let audio = routes?.first?["audio"] as? [String: Any]
        #expect(report?["daemon"] as? Bool == true)
        #expect(routes?.first?["device"] as? String == "Kitchen Speaker")
        #expect(audio?["framesReceived"] as? Int == 8_820, "\(status.lines) \(stream.lines)")
        #expect(audio?["active"] as? Bool == false)
        #expect(audio?["format"] as? String == "s16le/44100/2")
        // One schema for the route's status, whichever surface shows it.
        let route = try #require(routes?.first)
        let details = route["details"] as? [String: Any]
        #expect(route["protocolID"] as? String == "org.mediaroute.loopback" && route["format"] as? String == "s16le/44100/2", "\(route)")
        #expect(details?["codec"] as? String == "PCM" && details?["timing"] as? String == "as-received", "\(route)")
        #expect((route["measuredLatencyMicroseconds"] as? Int).map { $0 > 0 } == true, "\(route)")
    }

    /// Two speakers that buffer 50 and 200 ms: the quicker one gets 150 ms of silence first, so a
    /// sample comes out of both at once; each gets the whole file.
    @Test func severalDevicesPlayAsAGroupAlignedToTheSlowest() async throws {
        let daemon = try await RunningDaemon.with(scenario: RunningDaemon.quickAndSlowSpeakers)
        let path = try wavFile(frames: 8_820)
        defer { try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path) }
        let stream = RecordingConsole()
        try await MediaRouteCtl.Stream.parse([path, "--to", "Slow Speaker", "--to", "Quick Speaker", "--keep", "--bus", daemon.bus.address]).run(console: stream)
        #expect(stream.lines.contains("Quick Speaker starts 150 ms later, to play with the others"), "\(stream.lines)")
        #expect(!stream.lines.contains { $0.hasPrefix("Slow Speaker starts") })
        #expect(stream.lines.last == "Ended.")

        let status = RecordingConsole()
        try await MediaRouteCtl.Status.parse(["--json", "--bus", daemon.bus.address]).run(console: status)
        let report = try JSONSerialization.jsonObject(with: Data(status.lines.joined(separator: "\n").utf8)) as? [String: Any]
        var received: [String: Int] = [:]
        var underruns: [String: Int] = [:]
        for route in report?["routes"] as? [[String: Any]] ?? [] {
            let audio = route["audio"] as? [String: Any]
            received[route["device"] as? String ?? "?"] = audio?["framesReceived"] as? Int
            underruns[route["device"] as? String ?? "?"] = audio?["underruns"] as? Int
        }
        // One delivery for the group (Manager1.AcquireGroupAudio): both routes report its numbers.
        #expect(stream.lines.contains { $0.hasPrefix("Streaming s16le/44100/2 to Slow Speaker + Quick Speaker as a group (latency ") }, "\(stream.lines)")
        #expect(received["Slow Speaker"] == 8_820 && received["Quick Speaker"] == 8_820, "\(received)")
        #expect(underruns.values.allSatisfy { $0 == 0 }, "one clock, no member waits on another: \(underruns)")
    }

    /// Through the bus: a member that released its audio (`ReleaseAudio`) cannot pause the group
    /// (`Pause` on it is refused), and `Manager1.JoinGroupAudio` takes it back with its lead.
    @Test func aMemberLeavesAGroupAndJoinsItAgainThroughTheBus() async throws {
        let daemon = try await RunningDaemon.with(scenario: RunningDaemon.quickAndSlowSpeakers)
        let (_, _, controller) = try await client(daemon, agent: ScriptedPairingAgent([]))
        let picker = controller.makePicker(prioritizesVideoDevices: false)
        await picker.open()
        #expect(await eventually { await picker.entries().count == 2 })
        let quick = try await picker.pick(try #require(await picker.entries().first { $0.displayName == "Quick Speaker" }))
        let slow = try await picker.pick(try #require(await picker.entries().first { $0.displayName == "Slow Speaker" }))
        await picker.close()
        let (acquisition, leads) = try await controller.acquireGroupAudio([quick, slow], format: .cdAudio)
        #expect(leads == [.milliseconds(150), .zero])
        let descriptor = acquisition.descriptor
        let writer = writeOnOwnThread(rampFrames(88_200), to: descriptor, piece: 1_764)
        #expect(await eventually { (await slow.audioStatistics()?.framesDelivered ?? 0) > 4_410 })
        #expect(await quick.audioStatistics()?.groupLeadMicroseconds == 150_000, "AudioGroupLead over the bus")
        await quick.stopRealtimeSampleDelivery()
        let pause = RecordingConsole()
        await #expect(throws: (any Error).self, "a member that left has no say over the group") {
            try await MediaRouteCtl.Pause.parse(["--to", "Quick Speaker", "--bus", daemon.bus.address]).run(console: pause)
        }
        #expect(try await controller.joinGroupAudio(quick, joining: slow) == .milliseconds(150))
        // Now it is a member again: pausing it pauses the group.
        let paused = RecordingConsole()
        try await MediaRouteCtl.Pause.parse(["--to", "Quick Speaker", "--bus", daemon.bus.address]).run(console: paused)
        #expect(paused.lines.last == "Quick Speaker: paused", "\(paused.lines)")
        try await Task.sleep(for: .milliseconds(300))
        let held = await slow.audioStatistics()?.framesReceived
        try await Task.sleep(for: .milliseconds(300))
        #expect(await slow.audioStatistics()?.framesReceived == held, "the whole group holds")
        let resumed = RecordingConsole()
        try await MediaRouteCtl.Resume.parse(["--to", "Slow Speaker", "--bus", daemon.bus.address]).run(console: resumed)
        #expect(await writer.value)
        #expect(await eventually(timeout: .seconds(5)) { await slow.audioStatistics()?.active == false })
        #expect(await quick.audioStatistics()?.framesReceived == 88_200)
        // Joining a group that has ended is a typed refusal.
        await #expect(throws: MediaDeviceError.self) { _ = try await controller.joinGroupAudio(quick, joining: slow) }
    }

    @Test func aMalformedWAVIsRefusedBeforeAnythingStarts() async throws {
        let daemon = try await RunningDaemon()
        let path = try wavFile(frames: 10)
        defer { try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path) }
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[34] = 24  // 24-bit samples
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        do {
            try await MediaRouteCtl.Stream.parse([path, "--to", "Kitchen Speaker", "--bus", daemon.bus.address]).run(console: RecordingConsole())
            Issue.record("a 24-bit WAV was streamed")
        } catch {
            #expect("\(error)".contains("24-bit"), "\(error)")
        }
        let status = RecordingConsole()
        try await MediaRouteCtl.Status.parse(["--bus", daemon.bus.address]).run(console: status)
        #expect(status.lines.contains("No active routes."), "nothing was activated")
    }
}
