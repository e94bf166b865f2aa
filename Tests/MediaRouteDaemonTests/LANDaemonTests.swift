import DBus
import Foundation
import MediaRouteBusAPI
import MediaRouteCommands
import MediaRouteTestSupport
import Testing
import MediaRouteTesting

/// mediarouted with UPnP renderers: a gmediarender in a network namespace, the daemon
/// searching only the lab's interface, mediaroutectl playing a local file through it.
@Suite(.timeLimit(.minutes(1)), .enabled(if: NamespaceLab.renderersAvailable && PrivateBus.isAvailable))
struct LANDaemonTests {
    @Test func aLocalFilePlaysOnALANRendererThroughTheDaemon() async throws {
        let lab = try NamespaceLab()
        let room = lab.rooms[0]
        try lab.gmediarender(in: room, name: "Daemon TV", uuid: "0a1b2c3d-0000-4000-8000-0000000000d1")
        let daemon = try await LANDaemon(interface: room.outside)
        defer { daemon.stop() }
        let bus = daemon.bus
        let file = try lab.wavFile(seconds: 20, name: "daemon.wav")
        let console = RecordingConsole()
        try await MediaRouteCtl.Play.parse(["--bus", bus.address, file, "--to", "Daemon TV", "--seconds", "2.5"]).run(console: console)
        #expect(console.lines.contains { $0.hasPrefix("Playing file://") && $0.hasSuffix("daemon.wav on Daemon TV") }, "\(console.lines)")
        #expect(console.lines.contains { $0.contains("playing") }, "\(console.lines)")
        #expect(console.lines.last == "Stopped.")
    }
}
