import DBus
import Foundation
import Logging
import LoopbackExtension
import LoopbackTransport
import MediaClock
import MediaDevice
import RoutingModel
import MediaRouteBusAPI
import MediaRouteDaemon
import MediaRouteTestSupport
import RouteSystem
import Testing
import MediaRouteTesting

/// One physical device, one D-Bus object with a stable path (issue "a real box shows real devices"):
/// a routing daemon in this process on a private bus, two protocols reporting the same TV.
@Suite(.timeLimit(.minutes(1)), .enabled(if: PrivateBus.isAvailable), .serialized) struct DeviceIdentityDaemonTests {
    static let first = MediaSharingProtocol("org.mediaroute.test.first", displayName: "First")
    static let second = MediaSharingProtocol("org.mediaroute.test.second", displayName: "Second")

    struct Rig {
        let bus: PrivateBus
        let connection: DBusConnection
        let probe: DBusConnection
        let daemon: RoutingDaemon
        let system: RouteSystem
        let transports: [LoopbackTransport]

        /// The device objects on the bus: path → Name.
        func deviceObjects() async throws -> [String: String] {
            let reply = try await probe.call(
                destination: DaemonNames.busName, path: DaemonNames.root, interface: "org.freedesktop.DBus.ObjectManager",
                member: "GetManagedObjects")
            var found: [String: String] = [:]
            for (path, interfaces) in reply.first?.dictionary ?? [:] {
                guard let device = interfaces.dictionary?[DaemonNames.device]?.dictionary else { continue }
                found[path] = device["Name"]?.string ?? ""
            }
            return found
        }
    }

    static func rig(_ specs: [[LoopbackDeviceSpec]]) async throws -> Rig {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let bus = try PrivateBus()
        let connection = try await DBusConnection.connect(to: .address(bus.address))
        let system = RouteSystem(logger: logger)
        var transports: [LoopbackTransport] = []
        for (index, devices) in specs.enumerated() {
            let transport = LoopbackTransport(scenario: LoopbackScenario(devices: devices), logger: logger)
            transports.append(transport)
            let protocolType = index == 0 ? first : second
            try await system.load { LoopbackExtension(transport: transport, routingManager: $0, protocolType: protocolType, logger: logger) }
        }
        let daemon = RoutingDaemon(system: system, connection: connection, logger: logger)
        try await daemon.start()
        await system.beginDiscovery(client: "test")
        let probe = try await DBusConnection.connect(to: .address(bus.address))
        return Rig(bus: bus, connection: connection, probe: probe, daemon: daemon, system: system, transports: transports)
    }

    static let tv = LoopbackDeviceSpec(name: "tv", displayName: "Den TV", kind: .tv)

    @Test func losingTheMemberSeenFirstKeepsThePathAndLeavesNoStaleObject() async throws {
        let rig = try await Self.rig([[Self.tv], [Self.tv]])
        #expect(await eventually { await rig.system.devicesList.first?.members.count == 2 })
        // Whichever protocol reported it first gave the entry its id.
        let id = try #require(await rig.system.devicesList.first?.id)
        let path = DaemonNames.devicePath(id).description
        let creator = id.hasPrefix(Self.first.identifier) ? 0 : 1
        let settled = await eventually { (try? await rig.deviceObjects()) == [path: "Den TV"] }
        let objects = (try? await rig.deviceObjects()) ?? [:]
        #expect(settled, "\(objects)")
        await rig.transports[creator].removeDevice(named: "tv")
        #expect(await eventually { await rig.system.devicesList.first?.members.count == 1 })
        let members = try await rig.probe.call(
            destination: DaemonNames.busName, path: DBusObjectPath(path)!, interface: "org.freedesktop.DBus.Properties", member: "Get",
            [.string(DaemonNames.device), .string("Protocols")])
        #expect(members.first?.unwrapped.array?.compactMap(\.string) == [(creator == 0 ? Self.second : Self.first).identifier])
        #expect(try await rig.deviceObjects() == [path: "Den TV"], "same path while a member remains")
        await rig.transports[1 - creator].removeDevice(named: "tv")
        #expect(await eventually { (try? await rig.deviceObjects())?.isEmpty == true }, "no stale object once every member is gone")
        await rig.daemon.stop()
        await rig.system.shutdown()
    }

    @Test func twoDevicesOfOneNameAreTwoObjectsWithADistinguishingSuffix() async throws {
        let twin = LoopbackDeviceSpec(name: "tv-2", displayName: "Den TV", kind: .tv)
        let rig = try await Self.rig([[Self.tv, twin]])
        #expect(await eventually { (try? await rig.deviceObjects())?.values.filter { $0.hasPrefix("Den TV (First") }.count == 2 })
        let names = try await rig.deviceObjects().values.sorted()
        #expect(names.count == 2 && Set(names).count == 2, "\(names)")
        #expect(names.allSatisfy { $0.hasPrefix("Den TV (First") }, "\(names)")
        // The twin leaves: the one left is plain "Den TV" again.
        await rig.transports[0].removeDevice(named: "tv-2")
        #expect(await eventually { (try? await rig.deviceObjects())?.values.sorted() == ["Den TV"] })
        await rig.daemon.stop()
        await rig.system.shutdown()
    }
}
