import Foundation
import LoopbackTransport
import MediaClock
import MediaRouteTestSupport
import Testing
import Transport

/// Collects discovery events from a stream in the background.
final class DiscoveryLog: Sendable {
    let events = Locked<[DiscoveryEvent]>([])
    let task: Task<Void, Never>

    init(_ stream: DiscoveryEvents) {
        let events = self.events
        task = Task { for await event in stream { events.withLock { $0.append(event) } } }
    }

    var names: [String] {
        events.value.map { event in
            switch event {
            case .appeared(let e): "appeared:\(e.id)"
            case .updated(let e): "updated:\(e.id)"
            case .lost(let id): "lost:\(id)"
            case .failed(let error): "failed:\(error.code)"
            }
        }
    }
}

extension Connection {
    /// The message channel a loopback connection offers; a test fails on a connection without one.
    var channel: any MessageChannel {
        get throws { try #require(messages) }
    }
}

func request(_ connection: any Connection, _ body: LoopbackRequest, id: UInt32) async throws -> LoopbackReply? {
    try await connection.channel.send(LoopbackEnvelope(id: id, body: body).encoded())
    var iterator = try connection.channel.incoming.makeAsyncIterator()
    while let bytes = try await iterator.next() {
        if let envelope = LoopbackEnvelope<LoopbackReply>.decode(bytes), envelope.id == id { return envelope.body }
    }
    return nil
}

@Suite(.timeLimit(.minutes(1))) struct LoopbackTransportTests {
    let clock = ManualHostClock()

    @Test func devicesAppearAndDisappearOnTheClock() async throws {
        let transport = LoopbackTransport(scenario: LoopbackScenario(devices: [
            LoopbackDeviceSpec(name: "a", kind: .tv),
            LoopbackDeviceSpec(name: "b", kind: .speaker, appearAfter: 2, disappearAfter: 5),
        ]), clock: clock)
        let log = DiscoveryLog(transport.discover())
        #expect(await eventually { log.names == ["appeared:a"] })
        #expect(await advance(clock, by: .milliseconds(500), upTo: .seconds(3)) { log.names.count == 2 })
        #expect(log.names == ["appeared:a", "appeared:b"])
        #expect(await advance(clock, by: .milliseconds(500), upTo: .seconds(4)) { log.names.count == 3 })
        #expect(log.names == ["appeared:a", "appeared:b", "lost:b"])
        log.task.cancel()
    }

    @Test func discoveryStopsWhenTheConsumerGoesAway() async throws {
        let transport = LoopbackTransport(scenario: .standard, clock: clock)
        let log = DiscoveryLog(transport.discover())
        #expect(await eventually { await transport.activeDiscoveryCount == 1 })
        log.task.cancel()
        #expect(await eventually { await transport.activeDiscoveryCount == 0 })
    }

    @Test func failingDiscoveryReportsFailureAndEnds() async throws {
        let transport = LoopbackTransport(scenario: LoopbackScenario(devices: [], discoveryFailure: "adapter off"), clock: clock)
        var events: [DiscoveryEvent] = []
        for await event in transport.discover() { events.append(event) }
        #expect(events == [.failed(TransportError(.discoveryFailed, "adapter off"))])

        let healthy = LoopbackTransport(scenario: .standard, clock: clock)
        let log = DiscoveryLog(healthy.discover())
        #expect(await eventually { log.names.count == 2 })
        await healthy.setDiscoveryFailure("interface down")
        #expect(await eventually { log.names.last == "failed:discoveryFailed" })
        #expect(await healthy.activeDiscoveryCount == 0)
    }

    @Test func refusedAndUnknownEndpointsFailToConnectWithTypedErrors() async throws {
        let transport = LoopbackTransport(scenario: LoopbackScenario(devices: [
            LoopbackDeviceSpec(name: "grumpy", kind: .tv, refusesConnections: true),
        ]), clock: clock)
        let endpoint = try #require(await transport.endpoint(named: "grumpy"))
        await #expect(throws: TransportError(.connectionRefused, "grumpy refused the connection")) {
            _ = try await transport.connect(to: endpoint)
        }
        let ghost = Endpoint(id: "ghost", transport: "loopback", address: .loopback(name: "ghost"))
        await #expect(throws: TransportError.self) { _ = try await transport.connect(to: ghost) }
        await transport.setRefusesConnections(false, for: "grumpy")
        let connection = try await transport.connect(to: endpoint)
        await connection.close()
    }

    @Test func pinIsRequiredBeforeAnythingElse() async throws {
        let transport = LoopbackTransport(scenario: LoopbackScenario(devices: [
            LoopbackDeviceSpec(name: "tv", kind: .tv, pin: "4321"),
        ]), clock: clock)
        let connection = try await transport.connect(to: try #require(await transport.endpoint(named: "tv")))
        guard case .welcome(.tv, true, _, _) = try await request(connection, .hello, id: 1) else {
            Issue.record("expected a welcome asking for pairing"); return
        }
        #expect(try await request(connection, .load(url: "http://x/a", application: nil), id: 2)
            == .failure(code: "unauthorized", message: "pair first"))
        #expect(try await request(connection, .pair(pin: "0000"), id: 3)
            == .failure(code: "wrongPIN", message: "the PIN does not match"))
        #expect(try await request(connection, .pair(pin: "4321"), id: 4) == .ok)
        guard case .playback(let status) = try await request(connection, .load(url: "http://x/a", application: nil), id: 5) else {
            Issue.record("expected playback status"); return
        }
        #expect(status.state == .paused)
        await connection.close()
    }

    @Test func repliesAreDelayedOnTheClockAndKeepTheirOrder() async throws {
        let transport = LoopbackTransport(scenario: LoopbackScenario(devices: [
            LoopbackDeviceSpec(name: "slow", kind: .tv, replyDelay: 2),
        ]), clock: clock)
        let connection = try await transport.connect(to: try #require(await transport.endpoint(named: "slow")))
        let received = Locked<[UInt32]>([])
        let reader = Task {
            for try await bytes in try connection.channel.incoming {
                if let id = LoopbackEnvelope<LoopbackReply>.decode(bytes)?.id { received.withLock { $0.append(id) } }
            }
        }
        try await connection.channel.send(LoopbackEnvelope(id: 1, body: LoopbackRequest.hello).encoded())
        try await connection.channel.send(LoopbackEnvelope(id: 2, body: LoopbackRequest.status).encoded())
        try await Task.sleep(for: .milliseconds(20))
        #expect(received.value.isEmpty, "nothing arrives before the delay")
        #expect(await advance(clock, by: .milliseconds(500), upTo: .seconds(3)) { received.value.count == 2 })
        #expect(received.value == [1, 2])
        await connection.close()
        _ = try await reader.value
    }

    @Test func connectionsDropOnScheduleAndWhenTheDeviceVanishes() async throws {
        let transport = LoopbackTransport(scenario: LoopbackScenario(devices: [
            LoopbackDeviceSpec(name: "flaky", kind: .tv, dropConnectionAfter: 3),
            LoopbackDeviceSpec(name: "other", kind: .speaker),
        ]), clock: clock)
        let flaky = try await transport.connect(to: try #require(await transport.endpoint(named: "flaky")))
        let failure = Task { () -> TransportError? in
            do {
                for try await _ in try flaky.channel.incoming {}
                return nil
            } catch let error as TransportError {
                return error
            } catch { return nil }
        }
        #expect(await advance(clock, by: .seconds(1), upTo: .seconds(5)) { await transport.connectionCount(to: "flaky") == 0 })
        #expect(await failure.value?.code == .connectionLost)
        await #expect(throws: TransportError.self) { try await flaky.channel.send([1]) }

        let other = try await transport.connect(to: try #require(await transport.endpoint(named: "other")))
        let otherFailure = Task { () -> TransportError.Code? in
            do { for try await _ in try other.channel.incoming {}; return nil } catch let e as TransportError { return e.code } catch { return nil }
        }
        let otherLifetime = Task { () -> TransportError.Code? in
            do { for try await _ in other.lifetime {}; return nil } catch let e as TransportError { return e.code } catch { return nil }
        }
        await transport.removeDevice(named: "other")
        #expect(await otherFailure.value == .connectionLost)
        #expect(await otherLifetime.value == .connectionLost, "the connection's lifetime ends with the loss too")
    }

    @Test func aConnectionClosedByUsEndsItsLifetimeWithoutAnError() async throws {
        let transport = LoopbackTransport(scenario: .standard, clock: clock)
        let connection = try await transport.connect(to: try #require(await transport.endpoint(named: "kitchen-speaker")))
        #expect(connection.gatt == nil && connection.audio == nil && connection.pairing == nil, "a simulated device only exchanges messages")
        let ended = Task { () -> Bool in
            do { for try await _ in connection.lifetime {}; return true } catch { return false }
        }
        await connection.close()
        #expect(await ended.value)
        await #expect(throws: TransportError.self) { try await connection.channel.send([1]) }
    }

    @Test func malformedRequestsGetAClearFailure() async throws {
        let transport = LoopbackTransport(scenario: .standard, clock: clock)
        let connection = try await transport.connect(to: try #require(await transport.endpoint(named: "kitchen-speaker")))
        try await connection.channel.send(Array("{not json".utf8))
        var iterator = try connection.channel.incoming.makeAsyncIterator()
        let bytes = try #require(try await iterator.next())
        #expect(LoopbackEnvelope<LoopbackReply>.decode(bytes)?.body == .failure(code: "malformed", message: "not a loopback request"))
        await connection.close()
    }
}

@Suite(.timeLimit(.minutes(1))) struct LoopbackScenarioTests {
    @Test func aScenarioFileLoadsWithDefaults() throws {
        let json = """
        {"devices": [
          {"name": "tv", "displayName": "Den TV", "kind": "tv", "pin": "1111", "replyDelay": 0.2,
           "deviceVolumeChanges": [{"after": 1, "volume": 0.9}]},
          {"name": "spk", "kind": "speaker", "appearAfter": 3}
        ]}
        """
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("scenario-\(UUID()).json").path
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let scenario = try LoopbackScenario.load(fromFile: path)
        #expect(scenario.devices.count == 2)
        #expect(scenario.devices[0].displayName == "Den TV")
        #expect(scenario.devices[0].deviceVolumeChanges == [.init(after: 1, volume: 0.9)])
        #expect(scenario.devices[1].displayName == "spk")
        #expect(scenario.devices[1].volume == 0.5)
        #expect(scenario.devices[1].appearAfter == 3)
    }

    @Test(arguments: [
        "{\"devices\": [{\"name\": \"a\", \"kind\": \"toaster\"}]}",
        "{\"devices\": [{\"name\": \"a\", \"kind\": \"tv\"}, {\"name\": \"a\", \"kind\": \"tv\"}]}",
        "{\"devices\": [{\"name\": \"\", \"kind\": \"tv\"}]}",
        "[]",
    ])
    func badScenariosAreRefusedWithAReason(json: String) {
        #expect(throws: LoopbackScenarioError.self) { try LoopbackScenario.decode(Data(json.utf8)) }
    }

    @Test func aMissingFileIsAClearError() {
        #expect(throws: LoopbackScenarioError.self) { try LoopbackScenario.load(fromFile: "/nonexistent/scenario.json") }
    }
}
