import DBus
import Foundation
import MediaRouteBusAPI
import MediaRouteTestSupport
import Testing
import MediaRouteTesting

/// mediarouted follows adapters while it runs: a veth plugged in makes the
/// devices behind it reachable, unplugging it ends their routes.
@Suite(.timeLimit(.minutes(1)), .enabled(if: PrivateBus.isAvailable && getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip")))
struct AdapterHotplugTests {
    func managedObjects(_ connection: DBusConnection) async throws -> [String: [String: DBusValue]] {
        let reply = try await connection.call(
            destination: DaemonNames.busName, path: DaemonNames.root, interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects")
        guard case .dictionary(_, _, let objects)? = reply.first else { return [:] }
        var result: [String: [String: DBusValue]] = [:]
        for object in objects {
            guard let path = object.key.string, case .dictionary(_, _, let interfaces) = object.value else { continue }
            for interface in interfaces where interface.key.string == DaemonNames.device {
                guard case .dictionary(_, _, let properties) = interface.value else { continue }
                var values: [String: DBusValue] = [:]
                for property in properties { if let name = property.key.string { values[name] = property.value.unwrapped } }
                result[path] = values
            }
        }
        return result
    }

    func devicePath(named name: String, _ connection: DBusConnection) async -> String? {
        (try? await managedObjects(connection))?.first { $0.value["Name"] == .string(name) }?.key
    }

    func adapterNames(_ connection: DBusConnection) async -> [String] {
        guard let reply = try? await connection.call(
            destination: DaemonNames.busName, path: DaemonNames.root, interface: "org.freedesktop.DBus.Properties", member: "Get",
            [.string(DaemonNames.manager), .string("Adapters")]),
            case .array(_, let entries)? = reply.first?.unwrapped
        else { return [] }
        return entries.compactMap { entry in
            guard case .structure(let fields) = entry else { return nil }
            return fields.first?.string
        }
    }

    @Test func aVethPluggedInMidRunIsUsedAndUnpluggingItEndsItsRoute() async throws {
        let suffix = String(UUID().uuidString.prefix(4)).lowercased()
        let adapter = "mrh\(suffix)a"
        let bus = try PrivateBus()
        defer { bus.stop() }
        let scenario = bus.directory + "/scenario.json"
        try """
            {"devices": [
              {"name": "wired", "displayName": "Wired TV", "kind": "tv", "adapter": "\(adapter)"},
              {"name": "always", "displayName": "Always Speaker", "kind": "speaker"}
            ]}
            """.write(toFile: scenario, atomically: true, encoding: .utf8)
        let daemon = try ChildProcess([
            RunningDaemon.binary, "--bus", bus.address, "--log-level", "warning", "--push-listen", "off", "--scenario", scenario,
            "--config", "/dev/null",
        ])
        defer { daemon.kill(); daemon.wait() }
        let connection = try await DBusConnection.connect(to: .address(bus.address))
        defer { connection.close() }
        #expect(await eventually(timeout: .seconds(10)) { (try? await connection.nameOwner(of: DaemonNames.busName)) ?? nil != nil })
        _ = try await connection.call(destination: DaemonNames.busName, path: DaemonNames.root, interface: DaemonNames.manager, member: "StartDiscovery")
        #expect(await eventually { await devicePath(named: "Always Speaker", connection) != nil })
        #expect(await devicePath(named: "Wired TV", connection) == nil, "its adapter is not there yet")
        #expect(!(await adapterNames(connection)).contains(adapter))

        // Plug in.
        let (added, addOutput) = try await ChildProcess.runOffPool(["/usr/sbin/ip", "link", "add", adapter, "type", "veth", "peer", "name", "mrh\(suffix)b"])
        try #require(added == 0, "\(addOutput)")
        defer { _ = try? ChildProcess.run(["/usr/sbin/ip", "link", "del", adapter]) }
        #expect(await eventually { (await adapterNames(connection)).contains(adapter) })
        #expect(await eventually { await devicePath(named: "Wired TV", connection) != nil })

        // Use it: activate the TV through it.
        let path = try #require(await devicePath(named: "Wired TV", connection))
        let activated = try await connection.call(
            destination: DaemonNames.busName, path: try #require(DBusObjectPath(path)), interface: DaemonNames.device, member: "Activate", [.string("")])
        let session = try #require(activated.first?.objectPath)
        let ended = try await connection.signals(matching: DBusMatchRule(path: session, interface: DaemonNames.session, member: "Ended"))

        // Unplug: the route ends with a reason, the device goes, the adapter is no longer listed.
        let (deleted, deleteOutput) = try await ChildProcess.runOffPool(["/usr/sbin/ip", "link", "del", adapter])
        try #require(deleted == 0, "\(deleteOutput)")
        var iterator = ended.makeAsyncIterator()
        let signal = try #require(await iterator.next())
        #expect(signal.body.first?.string?.isEmpty == false, "ended with an error, not a requested stop: \(signal.body)")
        #expect(await eventually { await devicePath(named: "Wired TV", connection) == nil })
        #expect(await eventually { !(await adapterNames(connection)).contains(adapter) })
        #expect(await devicePath(named: "Always Speaker", connection) != nil)
    }

    @Test func wiFiDisplayIsLoadedAndItsAbsenceInTheKernelStopsNothing() async throws {
        let daemon = try await RunningDaemon()
        defer { _ = daemon.stop() }
        let protocols = try await daemon.gdbus([
            "--object-path", "/org/mediaroute", "--method", "org.freedesktop.DBus.Properties.Get", DaemonNames.manager, "Protocols",
        ])
        #expect(protocols.contains("org.mediaroute.wifi-display"), "\(protocols)")
        let connection = try await DBusConnection.connect(to: .address(daemon.bus.address))
        defer { connection.close() }
        _ = try await connection.call(destination: DaemonNames.busName, path: DaemonNames.root, interface: DaemonNames.manager, member: "StartDiscovery")
        #expect(await eventually { (try? await managedObjects(connection))?.count == 2 }, "the loopback TV and speaker")
    }
}
