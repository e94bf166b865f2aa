import Logging
import LoopbackExtension
import LoopbackTransport
import MediaClock
import MediaDevice
import RoutingModel
import MediaRouteTestSupport
import RouteSystem
import Testing

/// Choosing the protocol of a merged device, and falling back (issue "a real box shows real devices").
@Suite(.timeLimit(.minutes(1))) struct ProtocolChoiceTests {
    static let first = MediaSharingProtocol("org.mediaroute.test.first", displayName: "First")
    static let second = MediaSharingProtocol("org.mediaroute.test.second", displayName: "Second")

    /// One TV seen through two protocols (two loopback transports): the first refuses connections when asked.
    static func system(
        firstRefuses: Bool, preferred: [String] = []
    ) async throws -> (RouteSystem, EventRecorder, LoopbackTransport, LoopbackTransport) {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        var configuration = RouteSystem.Configuration()
        configuration.preferredProtocols = preferred
        let clock = SystemHostClock()
        let system = RouteSystem(configuration: configuration, clock: clock, logger: logger)
        let recorder = await EventRecorder(system)
        let refusing = LoopbackTransport(
            scenario: LoopbackScenario(devices: [LoopbackDeviceSpec(name: "tv", displayName: "Den TV", kind: .tv, refusesConnections: firstRefuses)]),
            clock: clock, logger: logger)
        let working = LoopbackTransport(
            scenario: LoopbackScenario(devices: [LoopbackDeviceSpec(name: "tv", displayName: "Den TV", kind: .tv)]), clock: clock, logger: logger)
        try await system.load { LoopbackExtension(transport: refusing, routingManager: $0, protocolType: first, clock: clock, logger: logger) }
        try await system.load { LoopbackExtension(transport: working, routingManager: $0, protocolType: second, clock: clock, logger: logger) }
        await system.beginDiscovery(client: "test")
        #expect(await eventually { await system.devicesList.first?.members.count == 2 })
        return (system, recorder, refusing, working)
    }

    static func choices(_ recorder: EventRecorder) -> [(String, String)] {
        recorder.events.compactMap { event in
            if case .protocolChosen(let key, let reason) = event { return (key.protocolID, reason) }
            return nil
        }
    }

    @Test func aMemberThatFailsToActivateHandsOverToTheNextCapableOne() async throws {
        let (system, recorder, _, _) = try await Self.system(firstRefuses: true)
        let device = try #require(await system.devicesList.first)
        #expect(device.members.map(\.protocolType) == [Self.first, Self.second])
        let route = try await system.activate(deviceID: device.id, features: [.urlPlayback])
        #expect(route.protocolType == Self.second)
        let choices = Self.choices(recorder)
        #expect(choices.map(\.0) == [Self.first.identifier, Self.second.identifier])
        #expect(choices.last?.1.hasPrefix("falling back: First failed") == true, "\(choices)")
        await system.shutdown()
    }

    @Test func theConfiguredAndThePerDevicePreferenceComeFirst() async throws {
        let (system, recorder, _, _) = try await Self.system(firstRefuses: false, preferred: ["second"])
        let device = try #require(await system.devicesList.first)
        let route = try await system.activate(deviceID: device.id)
        #expect(route.protocolType == Self.second)
        #expect(Self.choices(recorder).map(\.1) == ["the preferred protocol"])
        let status = try #require(await system.routeStatus(on: route.session))
        #expect(status.protocolID == Self.second.identifier && status.protocolName == Self.second.displayName)
        #expect(status.protocolReason == "the preferred protocol", "the route's status says why its protocol was chosen")
        #expect(status.device == device.displayName && status.audio == nil && status.format == nil)
        await system.deactivate(route.session)
        // The person's choice for this device overrides the configured order.
        try await system.setPreferredProtocol(Self.first.identifier, forDevice: device.id)
        #expect(await system.preferredProtocol(forDevice: device.id) == Self.first.identifier)
        let again = try await system.activate(deviceID: device.id)
        #expect(again.protocolType == Self.first)
        #expect(Self.choices(recorder).last?.1 == "the protocol chosen for this device")
        await #expect(throws: MediaDeviceError.self) { try await system.setPreferredProtocol("org.example.none", forDevice: device.id) }
        await system.shutdown()
    }

    @Test func theEntryKeepsItsIdWhenTheMemberSeenFirstGoes() async throws {
        let (system, _, first, second) = try await Self.system(firstRefuses: false)
        let id = try #require(await system.devicesList.first?.id)
        // Either protocol's discovery may report the TV first; the entry is named after that one.
        let seenFirst = id == "\(Self.first.identifier)/tv" ? first : second
        #expect(id == "\(Self.first.identifier)/tv" || id == "\(Self.second.identifier)/tv", "\(id)")
        await seenFirst.removeDevice(named: "tv")
        #expect(await eventually { await system.devicesList.first?.members.count == 1 })
        #expect(await system.devicesList.map(\.id) == [id])
        await system.shutdown()
    }
}
