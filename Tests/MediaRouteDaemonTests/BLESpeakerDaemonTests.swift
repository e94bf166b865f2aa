import DBus
import Foundation
import MediaRouteBusAPI
import MediaRouteTestSupport
import Testing
import MediaRouteTesting

/// The daemon's `Device1` object of the device named `name`, when it publishes one.
func devicePath(named name: String, on connection: DBusConnection) async -> DBusObjectPath? {
    guard let reply = try? await connection.call(
        destination: DaemonNames.busName, path: DaemonNames.root, interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects"),
        case .dictionary(_, _, let objects)? = reply.first
    else { return nil }
    for object in objects {
        guard let interfaces = object.value.dictionary, let device = interfaces[DaemonNames.device]?.dictionary else { continue }
        if device["Name"]?.unwrapped == .string(name) { return object.key.objectPath }
    }
    return nil
}

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
        @Sendable func speakerPath() async -> DBusObjectPath? { await devicePath(named: "Porch Speaker", on: connection) }
        #expect(await eventually { await speakerPath() != nil })
        let path = try #require(await speakerPath())
        _ = try await connection.call(destination: DaemonNames.busName, path: path, interface: DaemonNames.device, member: "Activate", [.string("")])
        _ = try await connection.call(destination: DaemonNames.busName, path: path, interface: DaemonNames.device, member: "SetVolume", [.double(0.5)])
        #expect(await eventually { (try? await mock.call("VolumeState", [.objectPath(speaker)]).first?.bytes)?.first == 128 })
    }
}

/// `Device1.PreferredCodecs` through the daemon: a Classic speaker that takes AAC and SBC, a box
/// configured to prefer SBC, and the person asking for AAC on that one device.
@Suite(.timeLimit(.minutes(1)), .enabled(if: BlueZMock.available))
struct BluetoothCodecDaemonTests {
    @Test func settingPreferredCodecsMovesTheRouteToThatCodec() async throws {
        let mock = try await BlueZMock()
        defer { Task { await mock.stop() } }
        try await mock.addAdapter()
        let speaker = try await mock.addDevice("AA:00:00:00:00:0A", name: "Hall Speaker", uuids: ["0000110b-0000-1000-8000-00805f9b34fb"])
        try await mock.call("SetSinkCapabilities", [.objectPath(speaker), .bytes([0xFF, 0xFF, 2, 53])])
        let aac: [UInt8] = [0xC0, 0x01, 0x84, 0x83, 0xE8, 0x00]  // AAC-LC, 44.1 kHz, stereo, VBR, 256 kbit/s
        try await mock.call("SetSinkEndpoints", [.objectPath(speaker), .array(elementSignature: "(yay)", [
            .structure([.byte(0x00), .bytes([0xFF, 0xFF, 2, 53])]), .structure([.byte(0x02), .bytes(aac)]),
        ])])
        let configuration = FileManager.default.temporaryDirectory.appendingPathComponent("codecs-\(UUID().uuidString).conf")
        try "[bluetooth]\ncodecs = sbc, aac\n".write(to: configuration, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: configuration) }

        let bus = try PrivateBus()
        defer { bus.stop() }
        let daemon = try ChildProcess([
            RunningDaemon.binary, "--bus", bus.address, "--bluez-bus", mock.bus.address, "--log-level", "warning",
            "--push-listen", "off", "--config", configuration.path,
        ])
        defer { daemon.kill(); daemon.wait() }
        let connection = try await DBusConnection.connect(to: .address(bus.address))
        defer { connection.close() }
        #expect(await eventually(timeout: .seconds(10)) { (try? await connection.nameOwner(of: DaemonNames.busName)) ?? nil != nil })
        _ = try await connection.call(destination: DaemonNames.busName, path: DaemonNames.root, interface: DaemonNames.manager, member: "StartDiscovery")
        @Sendable func speakerPath() async -> DBusObjectPath? { await devicePath(named: "Hall Speaker", on: connection) }
        #expect(await eventually { await speakerPath() != nil })
        let path = try #require(await speakerPath())
        let session = try #require(try await connection.call(
            destination: DaemonNames.busName, path: path, interface: DaemonNames.device, member: "Activate", [.string("")]).first?.objectPath)
        @Sendable func property(_ object: DBusObjectPath, _ interface: String, _ name: String) async -> DBusValue? {
            try? await connection.call(
                destination: DaemonNames.busName, path: object, interface: "org.freedesktop.DBus.Properties", member: "Get",
                [.string(interface), .string(name)]).first?.unwrapped
        }
        #expect(await eventually { await property(session, DaemonNames.session, "Codec") == .string("SBC") }, "the configured order: SBC first")

        // A name the daemon does not know is refused with the reason; nothing changes.
        do {
            _ = try await connection.call(
                destination: DaemonNames.busName, path: path, interface: "org.freedesktop.DBus.Properties", member: "Set",
                [.string(DaemonNames.device), .string("PreferredCodecs"), .variant(.strings(["mp3"]))])
            Issue.record("mp3 was taken")
        } catch {
            #expect("\(error)".contains("unknown codec"), "\(error)")
        }
        _ = try await connection.call(
            destination: DaemonNames.busName, path: path, interface: "org.freedesktop.DBus.Properties", member: "Set",
            [.string(DaemonNames.device), .string("PreferredCodecs"), .variant(.strings(["aac", "sbc"]))])
        #expect(await property(path, DaemonNames.device, "PreferredCodecs") == .strings(["aac", "sbc"]))
        #expect(await eventually { await property(session, DaemonNames.session, "Codec") == .string("AAC") }, "the route moved to AAC")
        let transport = try await mock.call("TransportCodec", [.objectPath(speaker)])
        #expect(transport.first?.integer == 2)
    }
}
