import BlueZTransport
import DBus
import Foundation
import MediaRouteTestSupport
import Testing
import Transport
import MediaRouteTesting

/// Collects a discovery stream.
final class DiscoveryLog: Sendable {
    let events = Locked<[DiscoveryEvent]>([])
    let task: Task<Void, Never>
    init(_ stream: DiscoveryEvents) {
        let events = self.events
        task = Task { for await event in stream { events.withLock { $0.append(event) } } }
    }
    var appeared: [Endpoint] { events.value.compactMap { if case .appeared(let e) = $0 { e } else { nil } } }
    var updated: [Endpoint] { events.value.compactMap { if case .updated(let e) = $0 { e } else { nil } } }
    var lost: [String] { events.value.compactMap { if case .lost(let id) = $0 { id } else { nil } } }
}

@Suite(.timeLimit(.minutes(1)), .enabled(if: BlueZMock.available))
struct BlueZTransportTests {
    func makeTransport(
        _ mock: BlueZMock, _ configuration: BlueZTransport.Configuration = .init(retryDelay: .milliseconds(20)), ownSignalConnection: Bool = true
    ) async throws -> BlueZTransport {
        let manager = BlueZObjectManager(connection: mock.connection, ownSignalConnection: ownSignalConnection)
        try await manager.start()
        // BlueZ's signals are read on a second connection of our own, or on the shared one when told so.
        #expect((manager.signalExecutor != nil) == ownSignalConnection)
        return BlueZTransport(objectManager: manager, configuration: configuration)
    }

    @Test(arguments: [true, false]) func devicesPresentAtStartAreReportedAndOurFilterIsApplied(ownSignalConnection: Bool) async throws {
        let mock = try await BlueZMock()
        defer { Task { await mock.stop() } }
        try await mock.addAdapter()
        let speaker = try await mock.addDevice("AA:00:00:00:00:01", name: "Kitchen Speaker", rssi: -50)
        try await mock.addDevice("AA:00:00:00:00:02", name: "Heart Rate", uuids: [BlueZ.uuid(0x180D)], rssi: -40)
        try await mock.addDevice("AA:00:00:00:00:03", name: "Far Speaker", rssi: -95)
        let transport = try await makeTransport(mock, ownSignalConnection: ownSignalConnection)
        let log = DiscoveryLog(transport.discover())
        #expect(await eventually { log.appeared.count == 1 })
        let endpoint = try #require(log.appeared.first)
        #expect(endpoint.id == "AA:00:00:00:00:01")
        #expect(endpoint.name == "Kitchen Speaker")
        #expect(endpoint.address == .bluetooth(address: "AA:00:00:00:00:01", adapter: "hci0", object: speaker.rawValue))
        #expect(transport.devicePath(for: endpoint) == speaker, "the endpoint names its BlueZ object in its address")
        #expect(endpoint.signalStrength == -50)
        #expect(endpoint.services.contains(BlueZ.volumeControlService))
        // The filter BlueZ got.
        let filters = try await mock.call("DiscoveryFilters", [.string("hci0")]).first?.array ?? []
        let filter = try #require(filters.first?.dictionary)
        #expect(filter["Transport"]?.string == "auto", "LE and BR/EDR: Classic A2DP speakers too")
        #expect(filter["RSSI"]?.integer == -90)
        #expect(filter["DuplicateData"]?.bool == false)
        let uuids = (filter["UUIDs"]?.array ?? []).compactMap(\.string)
        #expect(uuids.contains(BlueZ.volumeControlService))

        // RSSI updates become endpoint updates; a device gone from BlueZ becomes lost.
        try await mock.call("SetRSSI", [.objectPath(speaker), .int16(-60)])
        #expect(await eventually { log.updated.last?.signalStrength == -60 })
        try await mock.call("SetRSSI", [.objectPath(speaker), .int16(-99)])  // below our threshold: lost
        #expect(await eventually { log.lost == ["AA:00:00:00:00:01"] })
        try await mock.call("SetRSSI", [.objectPath(speaker), .int16(-55)])
        #expect(await eventually { log.appeared.count == 2 })
        try await mock.call("RemoveDevicePath", [.objectPath(speaker)])
        #expect(await eventually { log.lost.count == 2 })

        // A device appearing later, while discovering.
        try await mock.addDevice("AA:00:00:00:00:04", name: "Bedroom Speaker", uuids: [BlueZ.audioSink], rssi: -70)
        #expect(await eventually { log.appeared.last?.id == "AA:00:00:00:00:04" })

        // Stopping discovery stops it and clears the filter.
        log.task.cancel()
        #expect(await eventually {
            let filters = (try? await mock.call("DiscoveryFilters", [.string("hci0")]).first?.array) ?? []
            return filters.last?.dictionary?.isEmpty == true
        })
        let discovering = try await mock.connection.call(
            destination: BlueZ.busName, path: "/org/bluez/hci0", interface: "org.freedesktop.DBus.Properties", member: "Get",
            [.string(BlueZ.adapter), .string("Discovering")])
        #expect(discovering.first?.unwrapped == .bool(false))
    }

    @Test func inProgressFromAnotherClientIsNotFatal() async throws {
        let mock = try await BlueZMock()
        defer { Task { await mock.stop() } }
        let adapter = try await mock.addAdapter()
        _ = try await mock.connection.call(destination: BlueZ.busName, path: adapter, interface: BlueZ.adapter, member: "StartDiscovery")
        try await mock.addDevice("AA:00:00:00:00:01", name: "Kitchen Speaker")
        let transport = try await makeTransport(mock)
        let log = DiscoveryLog(transport.discover())
        defer { log.task.cancel() }
        #expect(await eventually { log.appeared.count == 1 })
    }

    @Test(arguments: [
        (["inprogress", "inprogress", "ok"], Int64(3)),
        (["abort", "ok"], Int64(2)),
        (["late-gatt"], Int64(1)),
    ])
    func connectRetriesAndWaitsForServices(script: [String], calls: Int64) async throws {
        let mock = try await BlueZMock()
        defer { Task { await mock.stop() } }
        try await mock.addAdapter()
        let device = try await mock.addDevice("AA:00:00:00:00:01", name: "Kitchen Speaker")
        try await mock.call("AddVolumeControl", [.objectPath(device), .byte(100), .bool(false), .byte(16)])
        try await mock.call("SetConnectScript", [.objectPath(device), .strings(script)])
        let transport = try await makeTransport(mock)
        try await transport.connectDevice(device)
        #expect(try await mock.call("ConnectCalls", [.objectPath(device)]).first?.integer == calls)
        let properties = try #require(await transport.objectManager.properties(of: device, BlueZ.device))
        #expect(properties["ServicesResolved"]?.bool == true)
        // GATT objects that appear after ServicesResolved are still picked up.
        let state = await transport.waitForCharacteristic(BlueZ.volumeState, of: device)
        #expect(state != nil)
        // Already connected: no second Connect.
        try await transport.connectDevice(device)
        #expect(try await mock.call("ConnectCalls", [.objectPath(device)]).first?.integer == calls)
    }

    @Test func aLinkThatDropsOrRefusesIsATypedError() async throws {
        let mock = try await BlueZMock()
        defer { Task { await mock.stop() } }
        try await mock.addAdapter()
        let device = try await mock.addDevice("AA:00:00:00:00:01", name: "Kitchen Speaker")
        let transport = try await makeTransport(mock)
        try await mock.call("SetConnectScript", [.objectPath(device), .strings(["drop"])])
        await #expect(throws: TransportError(.connectionLost, "\(device) disconnected before its services were resolved")) {
            try await transport.connectDevice(device)
        }
        try await mock.call("SetConnectScript", [.objectPath(device), .strings(["inprogress", "inprogress", "inprogress", "inprogress"])])
        do {
            try await transport.connectDevice(device)
            Issue.record("connected although every attempt was InProgress")
        } catch {
            #expect(error.code == .timedOut)
        }
        try await mock.call("SetConnectScript", [.objectPath(device), .strings(["fail"])])
        do {
            try await transport.connectDevice(device)
            Issue.record("connected although Connect failed")
        } catch {
            #expect(error.code == .connectionRefused)
        }
    }

    @Test func adapterRemovalLosesItsDevicesAndANewAdapterIsUsed() async throws {
        let mock = try await BlueZMock()
        defer { Task { await mock.stop() } }
        try await mock.addAdapter()
        try await mock.addDevice("AA:00:00:00:00:01", name: "Kitchen Speaker")
        let transport = try await makeTransport(mock)
        let log = DiscoveryLog(transport.discover())
        defer { log.task.cancel() }
        #expect(await eventually { log.appeared.count == 1 })
        try await mock.call("RemoveAdapter", [.string("hci0")])
        #expect(await eventually { log.lost == ["AA:00:00:00:00:01"] })
        try await mock.addAdapter("hci1", address: "00:11:22:33:44:66")
        try await mock.addDevice("AA:00:00:00:00:09", name: "Den Speaker", adapter: "hci1")
        #expect(await eventually { log.appeared.last?.id == "AA:00:00:00:00:09" })
        // Devices are reported as their signals arrive; StartDiscovery on the new adapter may still be on its way.
        #expect(await eventually {
            let discovering = try? await mock.connection.call(
                destination: BlueZ.busName, path: "/org/bluez/hci1", interface: "org.freedesktop.DBus.Properties", member: "Get",
                [.string(BlueZ.adapter), .string("Discovering")])
            return discovering?.first?.unwrapped == .bool(true)
        })
    }

    /// Three controllers: the preferred (udev's `primary`) one is used; when it goes, another
    /// already there is used at once; one the box's udev rules disabled is never used.
    @Test func whenItsAdapterGoesDiscoveryMovesToAnotherAndNeverToAnIgnoredOne() async throws {
        let mock = try await BlueZMock()
        defer { Task { await mock.stop() } }
        try await mock.addAdapter()
        try await mock.addAdapter("hci1", address: "00:11:22:33:44:66")
        try await mock.addAdapter("hci2", address: "00:11:22:33:44:77")
        try await mock.addDevice("AA:00:00:00:00:01", name: "Kitchen Speaker")
        try await mock.addDevice("AA:00:00:00:00:02", name: "Den Speaker", adapter: "hci1")
        try await mock.addDevice("AA:00:00:00:00:03", name: "Garage Speaker", adapter: "hci2")
        let transport = try await makeTransport(
            mock, .init(ignoredAdapterNames: ["hci1"], preferredAdapterNames: ["hci2"], retryDelay: .milliseconds(20)))
        let log = DiscoveryLog(transport.discover())
        defer { log.task.cancel() }
        #expect(await eventually { log.appeared.map(\.id) == ["AA:00:00:00:00:03"] }, "the preferred one first")
        try await mock.call("RemoveAdapter", [.string("hci2")])
        #expect(await eventually { log.lost == ["AA:00:00:00:00:03"] && log.appeared.last?.id == "AA:00:00:00:00:01" })
        #expect(!log.appeared.contains { $0.id == "AA:00:00:00:00:02" }, "hci1 is disabled")
        #expect(await transport.adapter()?.rawValue == "/org/bluez/hci0")
    }

    /// Signals are published on the D-Bus I/O thread with the cache locked while
    /// consumers come and go: a consumer cancelled mid-burst once deadlocked
    /// (its stream's termination handler took the cache lock under the task's
    /// status lock while the I/O thread, holding the cache lock, was resuming it).
    @Test func eventConsumersCanBeCancelledDuringABurst() async throws {
        let mock = try await BlueZMock()
        defer { Task { await mock.stop() } }
        try await mock.addAdapter()
        // Signals read one by one, as they come: consumers live 2 ms each.
        let manager = BlueZObjectManager(connection: mock.connection, signalCoalescing: .zero)
        try await manager.start()
        let burst = Task {
            try await mock.connection.call(
                destination: BlueZ.busName, path: "/", interface: "org.mediaroute.BlueZMock", member: "AddDevices",
                [.string("hci0"), .uint32(400), .string(BlueZ.volumeControlService)], timeout: .seconds(60))
        }
        var consumed = 0
        while await manager.paths(implementing: BlueZ.device).count < 400 {
            let consumers = (0..<8).map { _ in
                Task {
                    var seen = 0
                    for await _ in await manager.events() { seen += 1 }
                    return seen
                }
            }
            try await Task.sleep(for: .milliseconds(2))
            for consumer in consumers { consumer.cancel() }
            for consumer in consumers { consumed += await consumer.value }
        }
        _ = try await burst.value
        #expect(await manager.paths(implementing: BlueZ.device).count == 400)
        #expect(consumed > 0, "the consumers saw part of the burst")
    }

    @Test func losingTheSignalConnectionFallsBackToTheSharedOne() async throws {
        let mock = try await BlueZMock()
        defer { Task { await mock.stop() } }
        try await mock.addAdapter()
        try await mock.addDevice("AA:00:00:00:00:01", name: "Kitchen Speaker")
        let transport = try await makeTransport(mock)
        let log = DiscoveryLog(transport.discover())
        defer { log.task.cancel() }
        #expect(await eventually { log.appeared.count == 1 })
        // The own connection goes (as after a malformed message): nothing may go stale.
        let own = try #require(transport.objectManager.signalExecutor as? DBusSignalConnection)
        own.close()
        #expect(await eventually { transport.objectManager.signalExecutor == nil })
        try await mock.addDevice("AA:00:00:00:00:02", name: "Bedroom Speaker")
        #expect(await eventually { log.appeared.map(\.id).contains("AA:00:00:00:00:02") })
        #expect(await transport.objectManager.paths(implementing: BlueZ.device).count == 2)
        #expect(!own.isConnected)
    }

    @Test(arguments: [true, false]) func aRestartedBlueZIsReadAgain(ownSignalConnection: Bool) async throws {
        let mock = try await BlueZMock()
        defer { Task { await mock.stop() } }
        try await mock.addAdapter()
        try await mock.addDevice("AA:00:00:00:00:01", name: "Kitchen Speaker")
        let transport = try await makeTransport(mock, ownSignalConnection: ownSignalConnection)
        let log = DiscoveryLog(transport.discover())
        defer { log.task.cancel() }
        #expect(await eventually { log.appeared.count == 1 })
        await mock.kill()
        #expect(await eventually { log.lost == ["AA:00:00:00:00:01"] })
        #expect(await transport.objectManager.objects.isEmpty)
        try await mock.start()
        try await mock.addAdapter()
        try await mock.addDevice("AA:00:00:00:00:01", name: "Kitchen Speaker")
        #expect(await eventually { log.appeared.count == 2 })
        #expect(await eventually {
            let value = try? await mock.connection.call(
                destination: BlueZ.busName, path: "/org/bluez/hci0", interface: "org.freedesktop.DBus.Properties", member: "Get",
                [.string(BlueZ.adapter), .string("Discovering")])
            return value?.first?.unwrapped == .bool(true)
        })
    }

    /// Answers every prompt with one answer and records the prompts.
    struct RecordingHandler: PairingPromptHandler {
        let answer: PairingAnswer
        let prompts = Locked<[PairingPrompt]>([])
        func answer(_ prompt: PairingPrompt) async -> PairingAnswer {
            prompts.withLock { $0.append(prompt) }
            return answer
        }
    }

    @Test func theAgentAsksOnlyThePairingUnderWayForTheAskingDevice() async throws {
        let mock = try await BlueZMock()
        defer { Task { await mock.stop() } }
        try await mock.addAdapter()
        let speaker = try await mock.addDevice("AA:00:00:00:00:01", name: "Kitchen Speaker")
        let phone = try await mock.addDevice("AA:00:00:00:00:09", name: "Phone")
        try await mock.call("SetPairing", [.objectPath(speaker), .string("passkey"), .string("123456")])
        let transport = try await makeTransport(mock)
        try await transport.registerPairingAgent()
        // A device nobody is pairing asks: refused, and no handler hears of it.
        await #expect(throws: DBusError(name: "org.bluez.Error.Rejected", message: "rejected by the user")) {
            _ = try await mock.connection.call(
                destination: mock.connection.uniqueName, path: BlueZAgent.path, interface: BlueZ.agent, member: "RequestPasskey", [.objectPath(phone)])
        }
        let handler = RecordingHandler(answer: .code("123456"))
        try await transport.pair(speaker, answering: handler)
        #expect(handler.prompts.value == [.passkeyEntry])
        #expect(await transport.objectManager.properties(of: speaker, BlueZ.device)?["Paired"]?.bool == true)
        // A wrong code is a typed authentication failure.
        let other = try await mock.addDevice("AA:00:00:00:00:02", name: "Den Speaker")
        try await mock.call("SetPairing", [.objectPath(other), .string("passkey"), .string("123456")])
        await #expect(throws: TransportError.self) { try await transport.pair(other, answering: RecordingHandler(answer: .code("000000"))) }
        do {
            try await transport.pair(other, answering: RecordingHandler(answer: .code("000000")))
        } catch {
            #expect(error.code == .authenticationFailed)
        }
    }

    /// BlueZ asks the agent before a paired, untrusted device opens a service: the audio profiles
    /// are granted, HID, PAN, OBEX and serial ports are refused.
    @Test func thePairedSpeakerMayOpenTheAudioProfilesAndNothingElse() async throws {
        let mock = try await BlueZMock()
        defer { Task { await mock.stop() } }
        try await mock.addAdapter()
        let speaker = try await mock.addDevice("AA:00:00:00:00:01", name: "Kitchen Speaker")
        let transport = try await makeTransport(mock)
        try await transport.registerPairingAgent()
        func authorize(_ uuid: String) async -> Bool {
            do {
                _ = try await mock.connection.call(
                    destination: mock.connection.uniqueName, path: BlueZAgent.path, interface: BlueZ.agent, member: "AuthorizeService",
                    [.objectPath(speaker), .string(uuid)])
                return true
            } catch {
                return false
            }
        }
        for uuid in ["0000110b-0000-1000-8000-00805f9b34fb", "0000110D-0000-1000-8000-00805F9B34FB", "0000110e-0000-1000-8000-00805f9b34fb",
                     "00000019-0000-1000-8000-00805f9b34fb", "00001844-0000-1000-8000-00805f9b34fb"] {
            #expect(await authorize(uuid), "\(uuid) is an audio profile")
        }
        for uuid in ["00001124-0000-1000-8000-00805f9b34fb", "00001812-0000-1000-8000-00805f9b34fb", "00001115-0000-1000-8000-00805f9b34fb",
                     "00001105-0000-1000-8000-00805f9b34fb", "00001101-0000-1000-8000-00805f9b34fb", "0000110b-0000-1000-8000-00805f9b34fc",
                     "deadbeef-0000-1000-8000-00805f9b34fb", ""] {
            #expect(await !authorize(uuid), "\(uuid) is not MediaRoute's to grant")
        }
    }
}
