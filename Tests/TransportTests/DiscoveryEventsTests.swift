import Foundation
import Synchronization
import Testing
import Transport

@Suite struct DiscoveryEventsTests {
    static func endpoint(_ id: String) -> Endpoint {
        Endpoint(id: id, transport: "test", address: .loopback(name: id), signalStrength: -40, attributes: ["name": id], services: ["s"])
    }

    static func ids(_ events: [DiscoveryEvent]) -> [String] {
        events.map { event in
            switch event {
            case .appeared(let endpoint), .updated(let endpoint): endpoint.id
            case .lost(let id): "lost " + id
            case .failed(let error): "failed \(error.code)"
            }
        }
    }

    /// The reasons `onTermination` was called with, in order.
    final class Terminations: Sendable {
        let reasons = Mutex<[DiscoveryEvents.Termination]>([])
        var value: [DiscoveryEvents.Termination] { reasons.withLock { $0 } }
        func record(_ reason: DiscoveryEvents.Termination) { reasons.withLock { $0.append(reason) } }
    }

    @Test func eventsYieldedBeforeAndAfterIterationArriveInOrderThenFinish() async {
        let (stream, continuation) = DiscoveryEvents.makeStream()
        let terminations = Terminations()
        continuation.onTermination = { terminations.record($0) }
        continuation.yield(.appeared(Self.endpoint("a")))
        continuation.yield(.updated(Self.endpoint("a")))
        let reader = Task {
            var seen: [DiscoveryEvent] = []
            for await event in stream { seen.append(event) }
            return seen
        }
        try? await Task.sleep(for: .milliseconds(50))
        continuation.yield(.appeared(Self.endpoint("b")))
        continuation.yield(.lost(endpointID: "a"))
        continuation.finish()
        #expect(continuation.yield(.appeared(Self.endpoint("late"))) == .terminated)
        let seen = await reader.value
        #expect(Self.ids(seen) == ["a", "a", "b", "lost a"])
        #expect(seen.first == .appeared(Self.endpoint("a")))
        #expect(terminations.value == [.finished])
    }

    @Test func bufferedEventsAreStillReadAfterFinish() async {
        let stream = DiscoveryEvents { continuation in
            for index in 0..<100 { continuation.yield(.appeared(Self.endpoint("\(index)"))) }
            continuation.finish()
        }
        var seen: [String] = []
        for await event in stream { seen += Self.ids([event]) }
        #expect(seen == (0..<100).map { "\($0)" })
    }

    @Test func cancellingTheWaitingConsumerEndsItAndTellsTheProducer() async throws {
        let (stream, continuation) = DiscoveryEvents.makeStream()
        let terminations = Terminations()
        continuation.onTermination = { terminations.record($0) }
        let reader = Task {
            var count = 0
            for await _ in stream { count += 1 }
            return count
        }
        continuation.yield(.appeared(Self.endpoint("a")))
        try await Task.sleep(for: .milliseconds(50))
        reader.cancel()
        #expect(await reader.value == 1)
        #expect(terminations.value == [.cancelled])
        #expect(continuation.yield(.appeared(Self.endpoint("b"))) == .terminated)
        continuation.finish()
        #expect(terminations.value == [.cancelled])
    }

    @Test func aCancelledConsumerReadsNothingMoreEvenWithEventsWaiting() async {
        let (stream, continuation) = DiscoveryEvents.makeStream()
        let terminations = Terminations()
        continuation.onTermination = { terminations.record($0) }
        for index in 0..<10 { continuation.yield(.appeared(Self.endpoint("\(index)"))) }
        let reader = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            var iterator = stream.makeAsyncIterator()
            return await iterator.next()
        }
        #expect(await reader.value == nil)
        #expect(terminations.value == [.cancelled])
    }

    @Test func lettingGoOfTheSequenceTellsTheProducer() async throws {
        let (stream, continuation) = DiscoveryEvents.makeStream()
        let terminations = Terminations()
        continuation.onTermination = { terminations.record($0) }
        for index in 0..<3 { continuation.yield(.appeared(Self.endpoint("\(index)"))) }
        let first = await Task {
            for await event in stream { return Self.ids([event]) }
            return []
        }.value
        #expect(first == ["0"])
        #expect(terminations.value.isEmpty)  // the test still holds `stream`
        _ = consume stream
        #expect(terminations.value == [.cancelled])
        #expect(continuation.yield(.appeared(Self.endpoint("x"))) == .terminated)
    }

    @Test func aTerminationHandlerSetAfterTheEndRunsAtOnce() {
        let (stream, continuation) = DiscoveryEvents.makeStream()
        withExtendedLifetime(stream) {
            continuation.finish()
            let terminations = Terminations()
            continuation.onTermination = { terminations.record($0) }
            #expect(terminations.value == [.finished])
        }
    }

    @Test func eventsFromManyThreadsEachArriveOnceInEachProducersOrder() async {
        let (stream, continuation) = DiscoveryEvents.makeStream()
        let producers = 4
        let perProducer = 5_000
        let reader = Task {
            var seen: [Int: [Int]] = [:]
            for await event in stream {
                guard case .appeared(let endpoint) = event else { continue }
                let parts = endpoint.id.split(separator: ".").compactMap { Int($0) }
                seen[parts[0], default: []].append(parts[1])
            }
            return seen
        }
        let threads = (0..<producers).map { producer in
            Thread {
                for index in 0..<perProducer { continuation.yield(.appeared(Self.endpoint("\(producer).\(index)"))) }
            }
        }
        for thread in threads { thread.start() }
        while threads.contains(where: { !$0.isFinished }) { try? await Task.sleep(for: .milliseconds(5)) }
        continuation.finish()
        let seen = await reader.value
        #expect(seen.count == producers)
        for producer in 0..<producers { #expect(seen[producer] == Array(0..<perProducer)) }
    }
}
