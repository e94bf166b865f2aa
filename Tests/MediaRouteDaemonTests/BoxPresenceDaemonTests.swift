import DBus
import Foundation
import MediaRouteBusAPI
import MediaRouteCommands
import MediaRouteTestSupport
import Testing
import MediaRouteTesting

/// Boxes of one household find each other: each mediarouted with a household key publishes
/// itself as `_mediaroute._udp` and, while discovering, finds the others and exchanges
/// clock samples with those that hold the same key.
@Suite(.timeLimit(.minutes(1)), .enabled(if: NamespaceLab.isAvailable && PrivateBus.isAvailable), .serialized)
struct BoxPresenceDaemonTests {
    /// mediarouted inside `room` (its LAN is the room's link) on a bus of its own.
    @discardableResult
    static func daemonInRoom(_ lab: NamespaceLab, _ room: NamespaceLab.Room, bus: PrivateBus, key: String, name: String) throws -> ChildProcess {
        try lab.start(in: room, [
            RunningDaemon.binary, "--bus", bus.address, "--lan", "on", "--lan-interfaces", room.inside, "--adapters", "off",
            "--push-listen", "off", "--config", "/dev/null", "--log-level", "warning", "--household-key", key, "--box-name", name,
        ], log: "\(name).log")
    }

    static let amplifyScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("HostilePeer/amplify.py").path

    /// A host on the LAN asks a box 100 times a second for its service (half the questions
    /// asking for a unicast answer), then sends its coordination port what a stranger can
    /// make: the box multicasts an answer at most once a second (RFC 6762 §6), never unicasts
    /// one to the asker, and a stranger's datagrams get nothing back. What the box sends is
    /// compared with what the host sent, on the wire.
    @Test func aHostCannotMakeABoxAnAmplifier() async throws {
        let lab = try NamespaceLab(rooms: 1)
        let room = lab.rooms[0]
        let directory = NSTemporaryDirectory() + "mr-amplify-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let household = directory + "/household.key"
        try "the household's shared secret\n".write(toFile: household, atomically: true, encoding: .utf8)
        chmod(household, 0o600)
        let bus = try PrivateBus()
        defer { bus.stop() }
        try Self.daemonInRoom(lab, room, bus: bus, key: household, name: "Kitchen Box")
        let connection = try await DBusConnection.connect(to: .address(bus.address))
        defer { connection.close() }
        #expect(await eventually(timeout: .seconds(10)) { (try? await connection.nameOwner(of: DaemonNames.busName)) ?? nil != nil })

        let seconds = 6
        let (status, output) = try await ChildProcess.runOffPool([
            "/usr/bin/python3", Self.amplifyScript, room.hostAddress, room.deviceAddress, String(seconds), String(seconds * 100),
        ])
        #expect(status == 0, "\(output)")
        let line = try #require(output.split(separator: "\n").last.map(String.init))
        let report = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let sent = try #require(report["sent"] as? [String: Int]), received = try #require(report["received"] as? [String: Int])
        let answers = try #require(report["answers"] as? Int)
        print("amplify: \(line)")
        #expect(answers >= 1, "the box answers at all (else this proves nothing): \(line)")
        #expect(answers <= seconds + 3, "at most one multicast answer a second: \(line)")
        let (answered, asked) = (try #require(received["mdns"]), try #require(sent["mdns"]))
        #expect(answered <= asked, "the box sent more than it was sent: \(line)")
        #expect(received["mdns_unicast"] == 0, "no unicast answers to a spoofable asker: \(line)")
        #expect(report["mediumPort"] is Int, "the port was learned from the box's SRV: \(line)")
        #expect(try #require(sent["medium"]) > 0 && received["medium"] == 0, "a stranger's datagrams get nothing back: \(line)")
    }

    /// SIGTERM stops the daemon's subsystems in the reverse of their start (its service group):
    /// the bus objects, Now Playing, the box's presence — whose goodbye the other boxes hear at
    /// once, not after its records' two-minute TTL, because it goes before the LAN closes — then
    /// the protocols and the bus connection; the process exits 0.
    @Test func aBoxStoppedBySIGTERMSaysGoodbyeFirstAndExitsCleanly() async throws {
        let lab = try NamespaceLab(rooms: 1)
        let directory = NSTemporaryDirectory() + "mr-goodbye-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let household = directory + "/household.key"
        try "the household's shared secret\n".write(toFile: household, atomically: true, encoding: .utf8)
        chmod(household, 0o600)
        let kitchenBus = try PrivateBus()
        defer { kitchenBus.stop() }
        let kitchen = try Self.daemonInRoom(lab, lab.rooms[0], bus: kitchenBus, key: household, name: "Kitchen Box")
        let here = try await RunningDaemon([
            "--lan", "on", "--lan-interfaces", lab.rooms[0].outside, "--adapters", "off", "--household-key", household, "--box-name", "Hall Box",
        ], simulate: false)
        let connection = try await DBusConnection.connect(to: .address(here.bus.address))
        defer { connection.close() }
        _ = try await connection.call(destination: DaemonNames.busName, path: DaemonNames.root, interface: Manager1.interface, member: "StartDiscovery", [])
        @Sendable func kitchenListed() async -> Bool {
            guard let values = try? await connection.call(
                destination: DaemonNames.busName, path: DaemonNames.root, interface: "org.freedesktop.DBus.Properties", member: "Get",
                [.string(Manager1.interface), .string("Boxes")]), let value = values.first
            else { return false }
            return Manager1.Properties(values: ["Boxes": value]).boxes.contains { $0.name == "Kitchen Box" }
        }
        #expect(await eventually(timeout: .seconds(10)) { await kitchenListed() })
        kitchen.kill()
        // Waited for on a thread of its own: a blocking waitpid must not hold one of the pool's.
        let status = await withCheckedContinuation { continuation in Thread.detachNewThread { continuation.resume(returning: kitchen.wait()) } }
        #expect(status == 0, "SIGTERM ends the daemon cleanly")
        #expect(await eventually(timeout: .seconds(4)) { await !kitchenListed() }, "its goodbye went out before its LAN closed")
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
        // `trust list` shows the box that answered the household's key, not the stranger;
        // forgotten, it is challenged again and answers again.
        @Sendable func trusted() async throws -> [String] {
            let console = RecordingConsole()
            try await MediaRouteCtl.Trust.List.parse(["--bus", here.bus.address]).run(console: console)
            return console.lines
        }
        let listed = try await trusted()
        #expect(listed.contains { $0.hasPrefix("household-box  Kitchen Box  \(lab.rooms[0].deviceAddress):") }, "\(listed)")
        #expect(!listed.contains { $0.contains("Neighbour Box") }, "\(listed)")
        let forget = RecordingConsole()
        try await MediaRouteCtl.Trust.Forget.parse(["Kitchen Box", "--bus", here.bus.address]).run(console: forget)
        #expect(forget.lines == ["Forgot 1 pinned identity of Kitchen Box."])
        await #expect(throws: (any Error).self, "a household box has nothing to accept") {
            try await MediaRouteCtl.Trust.Accept.parse(["Kitchen Box", "--bus", here.bus.address]).run(console: RecordingConsole())
        }
        #expect(await eventually(timeout: .seconds(5)) { ((try? await trusted()) ?? []).contains { $0.hasPrefix("household-box  Kitchen Box") } })
        // Discovery stopped: the boxes are forgotten and the medium has no peers to wake for.
        _ = try await connection.call(
            destination: DaemonNames.busName, path: DaemonNames.root, interface: Manager1.interface, member: "StopDiscovery", [])
        #expect(await eventually { (try? await boxes())?.isEmpty == true })
    }
}
