import LoopbackExtension
import LoopbackTransport
import MediaDevice
import RoutingModel
import MediaRouteTestSupport
import RouteSystem
import Testing

@Suite(.timeLimit(.minutes(1))) struct DiscoveryTests {
    @Test func discoveryRunsWhileAtLeastOneClientWantsIt() async throws {
        let rig = try await LoopbackRig()
        #expect(await rig.transport.activeDiscoveryCount == 0)
        await rig.system.beginDiscovery(client: "picker-a")
        await rig.system.beginDiscovery(client: "picker-b")
        #expect(await eventually { await rig.transport.activeDiscoveryCount == 1 })
        await rig.system.endDiscovery(client: "picker-a")
        #expect(await rig.system.isDiscovering)
        try await Task.sleep(for: .milliseconds(10))
        #expect(await rig.transport.activeDiscoveryCount == 1, "still wanted by picker-b")
        await rig.system.endDiscovery(client: "picker-b")
        #expect(await !rig.system.isDiscovering)
        #expect(await eventually { await rig.transport.activeDiscoveryCount == 0 })
        let changes = { @Sendable in rig.recorder.events.compactMap { event -> String? in
            switch event {
            case .discoveryStarted: "started"
            case .discoveryStopped: "stopped"
            default: nil
            }
        } }
        #expect(await eventually { changes().count == 2 })
        #expect(changes() == ["started", "stopped"])
    }

    @Test func aClientThatLeavesTakesAllItsInterestWithIt() async throws {
        let rig = try await LoopbackRig()
        await rig.system.beginDiscovery(client: "app")
        await rig.system.beginDiscovery(client: "app")
        await rig.system.endAllDiscovery(client: "app")
        #expect(await !rig.system.isDiscovering)
    }

    @Test func foundUpdatedLostArriveInOrder() async throws {
        let rig = try await LoopbackRig()
        await rig.discover(expecting: 2)
        await rig.transport.updateDevice(named: "tv", signalStrength: -70)
        await rig.transport.removeDevice(named: "tv")
        #expect(await eventually { rig.recorder.deviceEventNames.contains("lost:Living Room TV") })
        #expect(rig.recorder.deviceEventNames == [
            "found:Living Room TV", "found:Kitchen Speaker", "updated:Living Room TV", "lost:Living Room TV",
        ])
        #expect(await rig.system.devicesList.map(\.displayName) == ["Kitchen Speaker"])

        await rig.transport.addDevice(LoopbackRig.tv)
        #expect(await eventually { await rig.system.devicesList.count == 2 })
        #expect(await eventually { rig.recorder.deviceEventNames.last == "found:Living Room TV" })
    }

    @Test func oneDeviceSeenByTwoExtensionsIsListedOnceWithBothProtocols() async throws {
        let second = MediaSharingProtocol("org.mediaroute.loopback.mirror", displayName: "Mirror")
        let rig = try await LoopbackRig(
            devices: [LoopbackRig.tv],
            protocols: [(LoopbackExtension.defaultProtocol, true), (second, true)])
        await rig.system.beginDiscovery(client: "test")
        #expect(await eventually { await rig.system.devicesList.first?.members.count == 2 })
        let list = await rig.system.devicesList
        #expect(list.count == 1)
        #expect(list[0].protocolDisplayNames == ["Loopback", "Mirror"])
        #expect(await eventually { rig.recorder.deviceEventNames.count == 2 })
        #expect(rig.recorder.deviceEventNames == ["found:Living Room TV", "updated:Living Room TV"])

        // Activating through the second protocol explicitly.
        await rig.system.setPairingAgent(ScriptedPairingAgent([.code("1234")]))
        let route = try await rig.system.activate(deviceID: list[0].id, protocolID: second.identifier)
        #expect(route.protocolType == second)

        // Losing the device in one protocol leaves it listed through the other.
        await rig.transport.removeDevice(named: "tv")
        #expect(await eventually { await rig.system.devicesList.isEmpty })
        #expect(await eventually { rig.recorder.deviceEventNames.last == "lost:Living Room TV" })
        #expect(rig.recorder.deviceEventNames.suffix(2) == ["updated:Living Room TV", "lost:Living Room TV"])
    }

    @Test func discoveryFailureIsReportedAsAnEvent() async throws {
        let rig = try await LoopbackRig(discoveryFailure: "Bluetooth adapter is off")
        await rig.system.beginDiscovery(client: "test")
        let failure = await rig.recorder.first { event -> MediaDeviceError? in
            if case .discoveryFailed(_, let error) = event { return error }
            return nil
        }
        #expect(failure?.code == .discoveryFailed)
        #expect(failure?.message == "Bluetooth adapter is off")
    }
}

@Suite(.timeLimit(.minutes(1))) struct ExtensionLoadingTests {
    @Test(arguments: ["", "loopback", "org..mediaroute", "-org.x"])
    func aBadProtocolIdIsRefusedAtLoad(id: String) async throws {
        let rig = try await LoopbackRig(protocols: [])
        let transport = rig.transport
        await #expect(throws: MediaDeviceError.self) {
            try await rig.system.load { manager in
                LoopbackExtension(transport: transport, routingManager: manager,
                                  protocolType: MediaSharingProtocol(id, displayName: "Bad"))
            }
        }
        #expect(await rig.system.loadedProtocols.isEmpty)
    }

    @Test func aDuplicateProtocolIdIsRefusedAndTheFirstStays() async throws {
        let rig = try await LoopbackRig()
        let transport = rig.transport
        do {
            try await rig.system.load { manager in LoopbackExtension(transport: transport, routingManager: manager) }
            Issue.record("a duplicate protocol id was accepted")
        } catch let error as MediaDeviceError {
            #expect(error.code == .invalidProtocolType)
            #expect(error.message.contains("already loaded"))
        }
        #expect(await rig.system.loadedProtocols == [LoopbackExtension.defaultProtocol])
    }
}
