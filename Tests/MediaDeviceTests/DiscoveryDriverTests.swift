import MediaDevice
import RoutingModel
import Synchronization
import Testing
import Transport

/// A transport whose discoveries the test drives by hand.
final class HandDrivenTransport: Transport {
    let name = "hand"
    /// One continuation per `discover()` call, and whether that discovery was let go.
    let discoveries = Mutex<[(continuation: DiscoveryEvents.Continuation, ended: Bool)]>([])

    func discover() -> DiscoveryEvents {
        DiscoveryEvents { continuation in
            let index = discoveries.withLock { list in
                list.append((continuation, false))
                return list.count - 1
            }
            continuation.onTermination = { [weak self] _ in self?.discoveries.withLock { $0[index].ended = true } }
        }
    }

    func connect(to endpoint: Endpoint) async throws(TransportError) -> any Connection {
        throw TransportError(.unavailable, "no connections")
    }

    var count: Int { discoveries.withLock { $0.count } }
    func continuation(_ index: Int) -> DiscoveryEvents.Continuation { discoveries.withLock { $0[index].continuation } }
    func ended(_ index: Int) -> Bool { discoveries.withLock { $0[index].ended } }
}

@Suite(.timeLimit(.minutes(1))) struct DiscoveryDriverTests {
    func waitUntil(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<500 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return condition()
    }

    @Test func startsOnceDeliversInOrderAndStops() async throws {
        let transport = HandDrivenTransport()
        let driver = DiscoveryDriver()
        let seen = Mutex<[String]>([])
        driver.start(transport) { event in
            if case .appeared(let endpoint) = event { seen.withLock { $0.append(endpoint.id) } }
        }
        driver.start(transport) { _ in Issue.record("a second start must not start a second discovery") }
        #expect(transport.count == 1)
        for id in ["a", "b", "c"] {
            _ = transport.continuation(0).yield(.appeared(Endpoint(id: id, transport: "hand", address: .loopback(name: id))))
        }
        #expect(await waitUntil { seen.withLock { $0 } == ["a", "b", "c"] })
        driver.stop()
        #expect(!driver.isRunning)
        #expect(await waitUntil { transport.ended(0) }, "stopping lets the transport's discovery go")
    }

    @Test func aDiscoveryThatEndsByItselfCanBeStartedAgain() async throws {
        let transport = HandDrivenTransport()
        let driver = DiscoveryDriver()
        driver.start(transport) { _ in }
        _ = transport.continuation(0).yield(.failed(TransportError(.discoveryFailed, "adapter gone")))
        transport.continuation(0).finish()
        #expect(await waitUntil { !driver.isRunning })
        driver.start(transport) { _ in }
        #expect(transport.count == 2, "a fresh discovery after the failed one")
        #expect(driver.isRunning)
        driver.stop()
    }
}
