import DBus
import Foundation
import MediaRouteBusAPI
import MediaRouteCommands
import MediaRouteTestSupport
import Testing

/// Boxes of one household find each other: each mediarouted with a household key publishes
/// itself as `_mediaroute._udp` and, while discovering, finds the others and exchanges
/// clock samples with those that hold the same key.
@Suite(.timeLimit(.minutes(1)), .enabled(if: NamespaceLab.isAvailable && PrivateBus.isAvailable), .serialized)
struct BoxPresenceDaemonTests {
    /// mediarouted inside `room` (its LAN is the room's link) on a bus of its own.
    static func daemonInRoom(_ lab: NamespaceLab, _ room: NamespaceLab.Room, bus: PrivateBus, key: String, name: String) throws {
        try lab.start(in: room, [
            RunningDaemon.binary, "--bus", bus.address, "--lan", "on", "--lan-interfaces", room.inside, "--adapters", "off",
            "--push-listen", "off", "--config", "/dev/null", "--log-level", "warning", "--household-key", key, "--box-name", name,
        ], log: "\(name).log")
    }

    @Test func mediaroutectlBoxesListsTheHouseholdsBoxesWithTheirClocks() async throws {
        let lab = try NamespaceLab(rooms: 2)
        let directory = NSTemporaryDirectory() + "mr-boxes-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let household = directory + "/household.key", stranger = directory + "/other.key"
        try "the household's shared secret\n".write(toFile: household, atomically: true, encoding: .utf8)
        try "another household's secret\n".write(toFile: stranger, atomically: true, encoding: .utf8)
        // Secrets: only the owner may read them (the daemon refuses a key others can read).
        chmod(household, 0o600)
        chmod(stranger, 0o600)
        let (kitchenBus, neighbourBus) = (try PrivateBus(), try PrivateBus())
        defer {
            kitchenBus.stop()
            neighbourBus.stop()
        }
        try Self.daemonInRoom(lab, lab.rooms[0], bus: kitchenBus, key: household, name: "Kitchen Box")
        try Self.daemonInRoom(lab, lab.rooms[1], bus: neighbourBus, key: stranger, name: "Neighbour Box")
        let here = try await RunningDaemon([
            "--lan", "on", "--lan-interfaces", lab.rooms.map(\.outside).joined(separator: ","), "--adapters", "off",
            "--household-key", household, "--box-name", "Hall Box",
        ], simulate: false)
        let console = RecordingConsole()
        try await MediaRouteCtl.Boxes.parse(["--bus", here.bus.address, "--seconds", "4"]).run(console: console)
        let kitchen = try #require(console.lines.first { $0.hasPrefix("Kitchen Box  \(lab.rooms[0].deviceAddress):") }, "\(console.lines)")
        #expect(kitchen.contains(" clock "), "the household's box answers clock samples: \(kitchen)")
        let neighbour = try #require(console.lines.first { $0.hasPrefix("Neighbour Box  \(lab.rooms[1].deviceAddress):") }, "\(console.lines)")
        #expect(neighbour.hasSuffix("no clock samples (another household's key?)"), "\(neighbour)")
        #expect(!console.lines.contains { $0.hasPrefix("Hall Box") }, "a box does not list itself")

        // The same through the bus. Each process's host clock counts from its own start, so
        // the offset is the two daemons' start-up difference: bounded, steady, and known to
        // within its error bound.
        let connection = try await DBusConnection.connect(to: .address(here.bus.address))
        defer { connection.close() }
        @Sendable func boxes() async throws -> [Manager1.Box] {
            let values = try await connection.call(
                destination: DaemonNames.busName, path: DaemonNames.root, interface: "org.freedesktop.DBus.Properties", member: "Get",
                [.string(Manager1.interface), .string("Boxes")])
            return Manager1.Properties(values: ["Boxes": try #require(values.first)]).boxes
        }
        _ = try await connection.call(
            destination: DaemonNames.busName, path: DaemonNames.root, interface: Manager1.interface, member: "StartDiscovery", [])
        #expect(await eventually(timeout: .seconds(5)) { ((try? await boxes()) ?? []).contains { $0.name == "Kitchen Box" && $0.clockOffset != nil } })
        let first = try #require(try await boxes().first { $0.name == "Kitchen Box" })
        let offset = try #require(first.clockOffset), error = try #require(first.clockError)
        #expect(abs(offset) < 60 && error < 0.005, "offset \(offset) s ± \(error) s")
        try await Task.sleep(for: .seconds(2))
        let later = try #require(try await boxes().first { $0.name == "Kitchen Box" }?.clockOffset)
        #expect(abs(later - offset) < 0.002, "one machine's clocks do not drift apart: \(offset) then \(later)")
        let boxesNow = try await boxes()
        #expect(boxesNow.first { $0.name == "Neighbour Box" }?.clockOffset == nil)
        // Discovery stopped: the boxes are forgotten and the medium has no peers to wake for.
        _ = try await connection.call(
            destination: DaemonNames.busName, path: DaemonNames.root, interface: Manager1.interface, member: "StopDiscovery", [])
        #expect(await eventually { (try? await boxes())?.isEmpty == true })
    }
}
