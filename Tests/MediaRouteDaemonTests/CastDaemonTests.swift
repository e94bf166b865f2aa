import CastChannel
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

/// mediarouted with the Cast receiver written for the tests, announced over mDNS in a network
/// namespace, driven as a person would: `mediaroutectl devices`, `play URL --to NAME`, pause,
/// volume, stop.
@Suite(.timeLimit(.minutes(2)), .enabled(if: CastReceiverPeer.available && NamespaceLab.isAvailable && PrivateBus.isAvailable), .serialized)
struct CastDaemonTests {
    @Test func mediaroutectlFindsPlaysAndControlsACastTelevisionThroughTheDaemon() async throws {
        let lab = try NamespaceLab(rooms: 1)
        let room = lab.rooms[0]
        let peer = try CastReceiverPeer(lab: lab, room: room, name: "Lounge TV")
        let daemon = try await CastDaemon(browsing: room)
        defer { daemon.stop() }
        let (bus, state, connection) = (daemon.bus, daemon.state, daemon.connection)

        let listing = RecordingConsole()
        try await MediaRouteCtl.Devices.parse(["--bus", bus.address, "--seconds", "3", "--json"]).run(console: listing)
        let text = listing.lines.joined(separator: "\n")
        #expect(text.contains("Lounge TV") && text.contains("\"tv\"") && text.contains("Google Cast"), "\(text)")

        let url = "http://\(room.hostAddress):9/film.mp4"
        let console = RecordingConsole()
        try await MediaRouteCtl.Play.parse(["--bus", bus.address, url, "--to", "Lounge TV"]).run(console: console)
        #expect(console.lines.contains { $0.hasPrefix("Lounge TV: playing") }, "\(console.lines)")
        #expect(peer.received(CastNamespace.media, type: "LOAD").first.flatMap { ($0["media"] as? [String: Any])?["contentId"] as? String } == url)

        try await MediaRouteCtl.Pause.parse(["--bus", bus.address, "--to", "Lounge TV"]).run(console: RecordingConsole())
        #expect(await eventually { ((try? await peer.state())?["media"] as? [String: Any])?["state"] as? String == "PAUSED" })
        try await MediaRouteCtl.Volume.parse(["--bus", bus.address, "25", "--to", "Lounge TV"]).run(console: RecordingConsole())
        #expect(await eventually { abs((((try? await peer.state())?["volume"] as? [String: Any])?["level"] as? Double ?? 0) - 0.25) < 0.01 })
        try await MediaRouteCtl.Stop.parse(["--bus", bus.address, "--to", "Lounge TV"]).run(console: RecordingConsole())
        #expect(await eventually { (try? await peer.state())?["app"] is NSNull }, "stopping ends the app on the TV")

        // A local file outside serve-from (/tmp): mediaroutectl opens it and hands the descriptor
        // over; the daemon serves it to the TV, which fetches it from the box.
        let file = NSTemporaryDirectory() + "mr-cast-daemon-\(UUID().uuidString.prefix(8)).mp3"
        try Data(repeating: 0x55, count: 3000).write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let local = RecordingConsole()
        try await MediaRouteCtl.Play.parse(["--bus", bus.address, file, "--to", "Lounge TV"]).run(console: local)
        #expect(local.lines.contains { $0.hasPrefix("Lounge TV: playing") }, "\(local.lines)")
        let served = try #require(peer.received(CastNamespace.media, type: "LOAD").last.flatMap { ($0["media"] as? [String: Any])?["contentId"] as? String })
        #expect(served.hasPrefix("http://\(room.hostAddress):") && served.hasSuffix(".mp3"), "\(served)")
        #expect(await eventually(timeout: .seconds(5)) {
            (((try? await peer.state())?["fetched"] as? [String: Any])?[served] as? [String: Any])?["bytes"] as? Int == 3000
        }, "the TV fetched the whole file from the box")
        try await MediaRouteCtl.Stop.parse(["--bus", bus.address, "--to", "Lounge TV"]).run(console: RecordingConsole())

        // Handed over and then removed from the disk: served all the same, from the descriptor.
        let backend = try await DaemonRoutingBackend.connect(connection)
        let controller = await SystemRouteController(backend: backend, applicationIdentifier: "org.example.test")
        let picker = controller.makePicker(prioritizesVideoDevices: true)
        await picker.open()
        #expect(await eventually { await picker.entries().contains { $0.displayName == "Lounge TV" } })
        let route = try await picker.pick(try #require(await picker.entries().first { $0.displayName == "Lounge TV" }))
        let gone = NSTemporaryDirectory() + "mr-cast-gone-\(UUID().uuidString.prefix(8)).mp3"
        try Data(repeating: 0x66, count: 5000).write(to: URL(fileURLWithPath: gone))
        let descriptor = open(gone, O_RDONLY)
        unlink(gone)
        let call = Session1.Call.startFile(descriptor: DBusFileDescriptor(owning: descriptor), name: "gone.mp3", mode: .player, metadata: PlaybackMetadata())
        _ = try await connection.call(
            destination: DaemonNames.busName, path: DaemonNames.sessionPath(route.session), interface: Session1.interface, member: call.member, call.arguments)
        let handed = try #require(peer.received(CastNamespace.media, type: "LOAD").last.flatMap { ($0["media"] as? [String: Any])?["contentId"] as? String })
        #expect(handed.hasSuffix("/gone.mp3"), "\(handed)")
        #expect(await eventually(timeout: .seconds(5)) {
            (((try? await peer.state())?["fetched"] as? [String: Any])?[handed] as? [String: Any])?["bytes"] as? Int == 5000
        }, "the TV fetched the whole unlinked file")
        await controller.deactivate(route)
        await picker.close()

        let pins = try String(contentsOfFile: state + "/cast-certificates.json", encoding: .utf8)
        #expect(pins.contains("cast:\(peer.id)"), "the certificate is pinned in the state directory: \(pins)")
    }

    @Test func mediaroutectlTrustShowsAcceptsAndForgetsAReceiversChangedCertificate() async throws {
        let lab = try NamespaceLab(rooms: 1)
        let room = lab.rooms[0]
        let peer = try CastReceiverPeer(lab: lab, room: room, name: "Den TV")
        let daemon = try await CastDaemon(browsing: room)
        defer { daemon.stop() }
        let bus = daemon.bus
        @Sendable func trust(_ arguments: [String]) async throws -> [String] {
            let console = RecordingConsole()
            let rest = Array(arguments.dropFirst()) + ["--bus", bus.address]
            switch arguments[0] {
            case "list": try await MediaRouteCtl.Trust.List.parse(rest).run(console: console)
            case "accept": try await MediaRouteCtl.Trust.Accept.parse(rest).run(console: console)
            default: try await MediaRouteCtl.Trust.Forget.parse(rest).run(console: console)
            }
            return console.lines
        }
        let url = "http://\(room.hostAddress):9/film.mp4"
        try await MediaRouteCtl.Play.parse(["--bus", bus.address, url, "--to", "Den TV"]).run(console: RecordingConsole())
        try await MediaRouteCtl.Stop.parse(["--bus", bus.address, "--to", "Den TV"]).run(console: RecordingConsole())
        let listed = try await trust(["list"])
        #expect(listed.contains { $0.hasPrefix("cast-certificate  Den TV  ") && !$0.contains("NOW OFFERS") }, "\(listed)")

        let (certificate, key) = try CastReceiverPeer.makeCertificate(in: peer.directory, name: "replaced")
        try await peer.command("new-cert \(certificate) \(key)")
        await #expect(throws: (any Error).self, "the changed TV is refused") {
            try await MediaRouteCtl.Play.parse(["--bus", bus.address, url, "--to", "Den TV"]).run(console: RecordingConsole())
        }
        let changed = try await trust(["list"])
        #expect(changed.contains { $0.contains("Den TV") && $0.contains("NOW OFFERS") }, "\(changed)")
        #expect(try await trust(["accept", "Den TV"]) == ["Accepted 1 new identity of Den TV."])
        let playing = RecordingConsole()
        try await MediaRouteCtl.Play.parse(["--bus", bus.address, url, "--to", "Den TV"]).run(console: playing)
        #expect(playing.lines.contains { $0.hasPrefix("Den TV: playing") }, "accepted, it plays: \(playing.lines)")
        try await MediaRouteCtl.Stop.parse(["--bus", bus.address, "--to", "Den TV"]).run(console: RecordingConsole())

        #expect(try await trust(["forget", "Den TV"]) == ["Forgot 1 pinned identity of Den TV."])
        #expect(try await trust(["list"]) == ["Nothing is pinned."])
        await #expect(throws: (any Error).self, "nothing to forget twice") { _ = try await trust(["forget", "Den TV"]) }
    }
}

/// mediarouted browsing one room of a lab for Cast receivers, with a state directory of its
/// own (no serve-from: local files reach it as descriptors), on a bus of its own; ``stop()``
/// ends it and removes its directory.
final class CastDaemon: Sendable {
    let bus: PrivateBus
    let state: String
    let process: ChildProcess
    let connection: DBusConnection

    init(browsing room: NamespaceLab.Room) async throws {
        bus = try PrivateBus()
        state = NSTemporaryDirectory() + "mr-cast-daemon-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        process = try ChildProcess([
            RunningDaemon.binary, "--bus", bus.address, "--lan", "on", "--lan-interfaces", room.outside, "--adapters", "off", "--push-listen", "off",
            "--config", "/dev/null", "--log-level", "warning", "--state-dir", state,
        ])
        connection = try await DBusConnection.connect(to: .address(bus.address))
        let connection = self.connection
        #expect(await eventually(timeout: .seconds(10)) { (try? await connection.nameOwner(of: DaemonNames.busName)) ?? nil != nil })
    }

    func stop() {
        connection.close()
        process.kill()
        process.wait()
        bus.stop()
        try? FileManager.default.removeItem(atPath: state)
    }
}
