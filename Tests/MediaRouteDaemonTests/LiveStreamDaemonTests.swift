import Foundation
import MediaRouteClient
import RoutingModel
import MediaRouteCommands
import MediaRouteTestSupport
import Testing
import MediaRouteTesting

/// mediarouted sending the box's audio to a DLNA renderer as a live stream, alone and in one
/// group with an AirPlay receiver, driven by `mediaroutectl stream`: gmediarender and
/// shairport-sync in network namespaces, each output recorded with the time it played.
@Suite(.timeLimit(.minutes(3)), .enabled(if: NamespaceLab.renderersAvailable && AirPlayReceiver.available && PrivateBus.isAvailable), .serialized)
struct LiveStreamDaemonTests {
    struct Rig {
        let lab: NamespaceLab
        let renderer: TimedOutput
        let receiver: AirPlayReceiver?
        let daemon: LANDaemon
        let directory: String

        var bus: PrivateBus { daemon.bus }

        func stop() {
            daemon.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// gmediarender "Den Renderer" in the first room; with `airPlay`, shairport-sync "Porch AirPlay" in a second.
    func makeRig(airPlay: Bool) async throws -> Rig {
        let lab = try NamespaceLab(rooms: airPlay ? 2 : 1)
        let output = TimedOutput(pcmPath: lab.path("renderer.pcm"), timesPath: lab.path("renderer-times.txt"))
        try lab.gmediarender(in: lab.rooms[0], name: "Den Renderer", uuid: "0a1b2c3d-0000-4000-8000-000000000030", recording: output)
        let receiver = airPlay ? try AirPlayReceiver(in: lab, room: lab.rooms[1], name: "Porch AirPlay", timed: true) : nil
        let daemon = try await LANDaemon(interface: lab.rooms.map(\.outside).joined(separator: ","))
        let directory = NSTemporaryDirectory() + "mr-live-daemon-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return Rig(lab: lab, renderer: output, receiver: receiver, daemon: daemon, directory: directory)
    }

    @Test func mediaroutectlStreamsAFileToADLNARendererThroughTheDaemon() async throws {
        let rig = try await makeRig(airPlay: false)
        defer { rig.stop() }
        let file = rig.directory + "/tone.wav"
        try Data(wavBytes(stereoPCM: tone(seconds: 3))).write(to: URL(fileURLWithPath: file))
        let console = RecordingConsole()
        try await MediaRouteCtl.Stream.parse(["--bus", rig.bus.address, file, "--to", "Den Renderer"]).run(console: console)
        #expect(console.lines.contains { $0.hasPrefix("Streaming s16le/44100/2 to Den Renderer (latency ") }, "\(console.lines)")
        #expect(console.lines.last == "Ended.", "\(console.lines)")
        #expect(await eventually(timeout: .seconds(5)) { correlationWithTone(leftChannel(rig.renderer.pcm)) >= 0.99 },
                "\(rig.lab.log("gmediarender-\(rig.lab.rooms[0].inside).log").suffix(600))")
    }

    /// The issue's mixed group: one shairport-sync and one gmediarender, one source, the same
    /// click out of both at one instant to the DLNA path's precision (its latency is a calibrated
    /// constant: gmediarender reports whole seconds, so nothing refines it).
    @Test func anAirPlayReceiverAndADLNARendererPlayAsOneGroup() async throws {
        let rig = try await makeRig(airPlay: true)
        defer { rig.stop() }
        let file = rig.directory + "/clicks.wav"
        try Data(wavBytes(stereoPCM: impulseTrain(seconds: 10))).write(to: URL(fileURLWithPath: file))
        let console = RecordingConsole()
        try await MediaRouteCtl.Stream.parse(["--bus", rig.bus.address, file, "--to", "Porch AirPlay", "--to", "Den Renderer"]).run(console: console)
        #expect(console.lines.contains { $0.hasPrefix("Streaming s16le/44100/2 to Porch AirPlay + Den Renderer as a group") }, "\(console.lines)")
        let airPlay = try #require(rig.receiver)
        let heard = await eventually(timeout: .seconds(5)) { clickFrames(in: airPlay.pcm).count >= 18 && clickFrames(in: rig.renderer.pcm).count >= 18 }
        let counts = (clickFrames(in: airPlay.pcm).count, clickFrames(in: rig.renderer.pcm).count)
        #expect(heard, "clicks: AirPlay \(counts.0), DLNA \(counts.1) (\(rig.renderer.pcm.count / 4) frames); nearest offsets \(nearestClickOffsets(airPlay.output, rig.renderer))")
        let offsets = try #require(clickOffsets(airPlay.output, rig.renderer), "clicks: \(clickFrames(in: airPlay.pcm).count) and \(clickFrames(in: rig.renderer.pcm).count)")
        let settled = offsets.dropFirst(2).map(abs).sorted()
        print("AirPlay + DLNA group through mediarouted: click offsets (ms) \(offsets.map { ($0 * 10).rounded() / 10 })")
        #expect(settled.count >= 16)
        // The bound is the DLNA renderer's start: its calibrated latency (30 ms, the middle of
        // its starts) against when its pipeline started in this run, which nothing it reports
        // shows. Within a run the offset holds to a few ms (shairport-sync writes 8 ms packets);
        // from start to start the bench measured −10 to +19 ms (`mediaroute-bench
        // live-group-starts`, Docs/benchmarks.md), and this debug daemon with an idle machine
        // −14 to −37 ms (the renderer's first buffer reached it 0.4–1.7 ms after its answer's
        // head; its start is chosen at that read), so the test allows 60 for the start and 10
        // for the spread: a member off by a delivery batch (100 ms) or drifting still fails.
        let p95 = settled[min(settled.count - 1, settled.count * 95 / 100)]
        // Once (session 30, a full `make test`) the DLNA side ran a steady 50.7 ms ahead, not
        // reproduced since: what each side said of its timing goes with a failure.
        func lines(of path: String, matching words: [String]) -> String {
            let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").filter { line in words.contains { line.localizedCaseInsensitiveContains($0) } }.suffix(12).joined(separator: " | ")
        }
        let signed = offsets.dropFirst(2)
        #expect((signed.max() ?? 0) - (signed.min() ?? 0) <= 10, "the offset moved within the run: \(offsets)")
        #expect(p95 <= 60, """
            \(offsets); shairport-sync: \(lines(of: airPlay.logPath, matching: ["latency", "sync", "offset", "play"])); \
            gmediarender: \(rig.lab.log("gmediarender-\(rig.lab.rooms[0].inside).log").suffix(600))
            """)
    }

    /// The issue's "no configuration edited": a box whose PipeWire runs in a user's session,
    /// the daemon with an empty configuration file (`[audio] pipewire = auto`), and the session
    /// helper (`mediarouted pipewire-session`, what `mediaroute-pipewire.service` runs) in that
    /// session. `pw-play --target` into each route's node plays on a DLNA renderer and on a Cast
    /// receiver; the node goes with its route, and the helper leaves nothing behind.
    @Test(.enabled(if: HeadlessPipeWire.available && CastReceiverPeer.available))
    func pwPlayReachesADLNAAndACastDeviceWithNoConfigurationEdited() async throws {
        let lab = try NamespaceLab(rooms: 2)
        let output = TimedOutput(pcmPath: lab.path("renderer.pcm"), timesPath: lab.path("renderer-times.txt"))
        try lab.gmediarender(in: lab.rooms[0], name: "Den Renderer", uuid: "0a1b2c3d-0000-4000-8000-000000000031", recording: output)
        let cast = try CastReceiverPeer(lab: lab, room: lab.rooms[1], name: "Lounge TV")
        let pipewire = try await HeadlessPipeWire()
        let config = lab.path("mediaroute.conf")
        try "".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try await RunningDaemon(
            ["--config", config, "--lan", "on", "--lan-interfaces", lab.rooms.map(\.outside).joined(separator: ","), "--adapters", "off"],
            simulate: false)
        let helperLog = lab.path("pipewire-session.log")
        let logFD = open(helperLog, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let helper = try ChildProcess(
            [RunningDaemon.binary, "pipewire-session", "--bus", daemon.bus.address, "--log-level", "debug"],
            outputFD: logFD, environment: pipewire.environment)
        close(logFD)
        let (_, backend, controller) = try await client(daemon, agent: ScriptedPairingAgent([]))
        let picker = controller.makePicker(prioritizesVideoDevices: false)
        await picker.open()
        #expect(await eventually(timeout: .seconds(15)) {
            let names = await picker.entries().map(\.displayName)
            return names.contains("Den Renderer") && names.contains("Lounge TV")
        })
        let renderer = try await picker.pick(try #require(await picker.entries().first { $0.displayName == "Den Renderer" }))
        let television = try await picker.pick(try #require(await picker.entries().first { $0.displayName == "Lounge TV" }))
        let log: @Sendable () -> String = { (try? String(contentsOfFile: helperLog, encoding: .utf8)) ?? "" }
        let published = await eventually(timeout: .seconds(10)) {
            let nodes = await pipewire.nodes()
            return nodes.contains("mediaroute.den_renderer") && nodes.contains("mediaroute.lounge_tv")
        }
        let nodes = await pipewire.nodes()
        #expect(published, "the routes' nodes in the session's PipeWire: \(nodes); helper: \(log().suffix(800))")

        let tone = try writeWAV(rate: 48_000, frames: 4 * 48_000) { Int16(sin(Double($0) * 2 * .pi * 440 / 48_000) * 12_000) }
        async let toRenderer = pipewire.play(tone, target: "mediaroute.den_renderer")
        async let toTelevision = pipewire.play(tone, target: "mediaroute.lounge_tv")
        #expect(try await toRenderer == 0)
        #expect(try await toTelevision == 0)
        // Each device decodes what it fetched: gmediarender at 44.1 kHz, the Cast receiver through ffmpeg.
        let castOutput = cast.liveOutput
        let outputs: [(String, MediaOutputSession, @Sendable () -> [UInt8])] = [
            ("DLNA", renderer.session, { output.pcm }), ("Cast", television.session, { castOutput.pcm }),
        ]
        for (name, session, pcm) in outputs {
            let heard = await eventually(timeout: .seconds(10)) { leftChannel(pcm()).filter { abs($0) > 50 }.count > 44_100 * 3 }
            #expect(heard, "\(name): \(leftChannel(pcm()).filter { abs($0) > 50 }.count) samples above the floor")
            let correlation = correlationWithTone(leftChannel(pcm()))
            // Where a break-up came from: the daemon's delivery (underruns, drops) or the node (its drops, said in the helper's log).
            let statistics = await backend.audioStatistics(on: session)
            #expect(
                correlation >= 0.99,
                "\(name): cross-correlation \(correlation); delivery: \(statistics.map { "\($0.framesDelivered) frames, \($0.underruns) underruns, \($0.silenceFrames) silent, \($0.framesDropped) dropped" } ?? "none"); helper: \(log().split(separator: "\n").filter { $0.contains("dropped") })")
        }

        let afterPlay = await pipewire.nodes()
        #expect(afterPlay.contains("mediaroute.den_renderer") && afterPlay.contains("mediaroute.lounge_tv"), "nodes stay after playing: \(afterPlay)")
        // A route that ends takes its node with it; the helper stays for the next.
        await controller.deactivate(television)
        #expect(await eventually(timeout: .seconds(5)) { !(await pipewire.nodes().contains("mediaroute.lounge_tv")) })
        let remaining = await pipewire.nodes()
        #expect(remaining.contains("mediaroute.den_renderer"), "\(remaining); helper: \(log().suffix(1500))")
        // The helper stops its nodes' processes when it stops.
        helper.kill(SIGTERM)
        #expect(helper.wait() == 0, "\(log().suffix(800))")
        #expect(await eventually(timeout: .seconds(5)) { !(await pipewire.nodes().contains("mediaroute.den_renderer")) })
        await controller.deactivate(renderer)
        await picker.close()
        #expect(daemon.stop() == 0)
    }
}
