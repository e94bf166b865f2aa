import DBus
import Foundation
import MediaRouteBusAPI
import MediaRouteTestSupport
import Testing
import MediaRouteTesting

/// mediarouted with BLE speakers: BlueZ (the mock) on one bus, the daemon's API on another.
@Suite(.timeLimit(.minutes(1)), .enabled(if: BlueZMock.available))
struct BLESpeakerDaemonTests {
    @Test func aBLESpeakerIsDiscoveredActivatedAndItsVolumeSetThroughTheDaemon() async throws {
        let mock = try await BlueZMock()
        defer { Task { await mock.stop() } }
        try await mock.addAdapter()
        let speaker = try await mock.addDevice("AA:00:00:00:00:01", name: "Porch Speaker")
        try await mock.call("AddVolumeControl", [.objectPath(speaker), .byte(100), .bool(false), .byte(16)])
        try await mock.call("SetPairing", [.objectPath(speaker), .string("none"), .string("")])

        let bus = try PrivateBus()
        defer { bus.stop() }
        let daemon = try ChildProcess([
            RunningDaemon.binary, "--bus", bus.address, "--bluez-bus", mock.bus.address, "--log-level", "warning",
            "--push-listen", "off", "--config", "/dev/null",
        ])
        defer { daemon.kill(); daemon.wait() }
        let connection = try await DBusConnection.connect(to: .address(bus.address))
        defer { connection.close() }
        #expect(await eventually(timeout: .seconds(10)) { (try? await connection.nameOwner(of: DaemonNames.busName)) ?? nil != nil })
        _ = try await connection.call(destination: DaemonNames.busName, path: DaemonNames.root, interface: DaemonNames.manager, member: "StartDiscovery")
        @Sendable func speakerPath() async -> DBusObjectPath? {
            guard let reply = try? await connection.call(
                destination: DaemonNames.busName, path: DaemonNames.root, interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects"),
                case .dictionary(_, _, let objects)? = reply.first
            else { return nil }
            for object in objects {
                guard let interfaces = object.value.dictionary, let device = interfaces[DaemonNames.device]?.dictionary else { continue }
                if device["Name"]?.unwrapped == .string("Porch Speaker") { return object.key.objectPath }
            }
            return nil
        }
        #expect(await eventually { await speakerPath() != nil })
        let path = try #require(await speakerPath())
        _ = try await connection.call(destination: DaemonNames.busName, path: path, interface: DaemonNames.device, member: "Activate", [.string("")])
        _ = try await connection.call(destination: DaemonNames.busName, path: path, interface: DaemonNames.device, member: "SetVolume", [.double(0.5)])
        #expect(await eventually { (try? await mock.call("VolumeState", [.objectPath(speaker)]).first?.bytes)?.first == 128 })
    }
}
