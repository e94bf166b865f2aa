import DBus
import Foundation
import MediaRouteBusAPI
import MediaRouteCommands
import MediaRouteTestSupport
import Testing
import MediaRouteTesting

/// mediarouted with real AirPlay receivers (shairport-sync in network namespaces), driven as a
/// person would: `mediaroutectl stream FILE --to NAME`, the daemon finding the receivers by
/// mDNS on the lab's interfaces only.
@Suite(.timeLimit(.minutes(2)), .enabled(if: AirPlayReceiver.available && PrivateBus.isAvailable), .serialized)
struct AirPlayDaemonTests {
    struct Rig {
        let lab: NamespaceLab
        let receivers: [AirPlayReceiver]
        let bus: PrivateBus
        let daemon: ChildProcess
        let directory: String

        func stop() {
            daemon.kill()
            daemon.wait()
            bus.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// - Parameter latency: `--airplay-latency`, when not the default 2 s.
    func makeRig(_ names: [String], latency: String? = nil) async throws -> Rig {
        let lab = try NamespaceLab(rooms: names.count)
        let receivers = try zip(names, lab.rooms).map { name, room in try AirPlayReceiver(in: lab, room: room, name: name, timed: true) }
        let bus = try PrivateBus()
        let daemon = try ChildProcess([
            RunningDaemon.binary, "--bus", bus.address, "--lan", "on", "--lan-interfaces", lab.rooms.map(\.outside).joined(separator: ","),
            "--adapters", "off", "--push-listen", "off", "--config", "/dev/null", "--log-level", "warning", "--state-dir", "off",
        ] + (latency.map { ["--airplay-latency", $0] } ?? []))
        let connection = try await DBusConnection.connect(to: .address(bus.address))
        defer { connection.close() }
        #expect(await eventually(timeout: .seconds(10)) { (try? await connection.nameOwner(of: DaemonNames.busName)) ?? nil != nil })
        let directory = NSTemporaryDirectory() + "mr-airplay-daemon-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return Rig(lab: lab, receivers: receivers, bus: bus, daemon: daemon, directory: directory)
    }

    @Test func mediaroutectlStreamsAFileToAnAirPlayReceiverThroughTheDaemon() async throws {
        let rig = try await makeRig(["Den AirPlay"], latency: "0.5")
        defer { rig.stop() }
        let file = rig.directory + "/tone.wav"
        try Data(wavBytes(stereoPCM: tone(seconds: 2))).write(to: URL(fileURLWithPath: file))
        let console = RecordingConsole()
        try await MediaRouteCtl.Stream.parse(["--bus", rig.bus.address, file, "--to", "Den AirPlay", "--title", "Daemon Tone"]).run(console: console)
        #expect(console.lines.contains { $0.hasPrefix("Streaming s16le/44100/2 to Den AirPlay (latency 5") }, "\(console.lines)")
        #expect(console.lines.last == "Ended.", "\(console.lines)")
        let receiver = rig.receivers[0]
        #expect(await eventually(timeout: .seconds(5)) { correlationWithTone(leftChannel(receiver.pcm)) >= 0.99 }, "\(receiver.log.suffix(800))")
        #expect(await eventually(timeout: .seconds(5)) { receiver.metadata.contains("RGFlbW9uIFRvbmU=") }, "the title on the metadata pipe")
    }

    @Test func mediaroutectlStreamsToTwoAirPlayReceiversAsOneGroupInSync() async throws {
        let rig = try await makeRig(["Hall AirPlay", "Porch AirPlay"])
        defer { rig.stop() }
        let file = rig.directory + "/clicks.wav"
        try Data(wavBytes(stereoPCM: impulseTrain(seconds: 10))).write(to: URL(fileURLWithPath: file))
        let console = RecordingConsole()
        try await MediaRouteCtl.Stream.parse(["--bus", rig.bus.address, file, "--to", "Hall AirPlay", "--to", "Porch AirPlay"]).run(console: console)
        #expect(console.lines.contains { $0.hasPrefix("Streaming s16le/44100/2 to Hall AirPlay + Porch AirPlay as a group") }, "\(console.lines)")
        let (hall, porch) = (rig.receivers[0], rig.receivers[1])
        #expect(await eventually(timeout: .seconds(5)) { clickFrames(in: hall.pcm).count >= 18 && clickFrames(in: porch.pcm).count >= 18 }, "\(console.lines) clicks \(clickFrames(in: hall.pcm).count), \(clickFrames(in: porch.pcm).count)")
        let offsets = try #require(clickOffsets(hall.output, porch.output), "clicks: \(clickFrames(in: hall.pcm).count) and \(clickFrames(in: porch.pcm).count)")
        print("two AirPlay receivers through mediarouted: click offsets (ms) \(offsets.map { (($0 * 100).rounded()) / 100 })")
        // At the default 2 s latency. At 0.5 s this measured ±1.2 ms where 2 s measures ±0.1:
        // shairport-sync's stdout backend wants to run its 1 s buffer ahead of playing, and with
        // less latency than that it writes as packets come, so its output's times are the
        // network's rather than a steady clock's. As in-process, the first second (two clicks) is left
        // out: the receivers settle on the box's clock there.
        #expect(offsets.count >= 18)
        #expect((offsets.dropFirst(2).map(abs).max() ?? .infinity) < 1, "\(offsets)")
    }
}
