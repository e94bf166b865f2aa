import Foundation
import Synchronization
import Testing

@testable import MediaRouteExecutors

/// Threads taking from one board, as an executor's threads do; records what they took and when.
private final class Consumers: Sendable {
    let board = JobBoard<Int>()
    let taken = Mutex<[(job: Int, at: ContinuousClock.Instant)]>([])
    let exited = Atomic<Int>(0)

    init(threads: Int) {
        for _ in 0..<threads {
            Thread.detachNewThread { [self] in
                while let job = board.next() {
                    taken.withLock { $0.append((job, .now)) }
                }
                exited.add(1, ordering: .sequentiallyConsistent)
            }
        }
    }

    var count: Int { taken.withLock { $0.count } }

    func waitUntil(taken expected: Int, timeout: Duration = .seconds(10)) async throws {
        let deadline = ContinuousClock.now + timeout
        while count < expected, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
    }

    func stop() async throws {
        board.stop()
        for _ in 0..<1000 where exited.load(ordering: .sequentiallyConsistent) < 1 { try await Task.sleep(for: .milliseconds(1)) }
    }
}

@Suite struct JobBoardTests {
    /// Before: a thread that took a job signalled another whenever anything, even a
    /// far timer, was queued, so every job woke two threads.
    @Test func aJobWakesOneSleepingThreadNotAll() async throws {
        let consumers = Consumers(threads: 3)
        consumers.board.add(-1, after: .seconds(600))
        try await Task.sleep(for: .milliseconds(50))
        let before = consumers.board.threadWakeUps
        for job in 0..<200 {
            consumers.board.add(job)
            try await consumers.waitUntil(taken: job + 1)
        }
        let wakeUps = consumers.board.threadWakeUps - before
        #expect(consumers.count == 200)
        #expect(consumers.taken.withLock { $0.map(\.job) } == Array(0..<200))
        // One wake-up per job (a few spurious ones allowed).
        #expect(wakeUps <= 220, "\(wakeUps) wake-ups for 200 jobs")
        try await consumers.stop()
    }

    /// One thread watches the earliest deadline; when it takes that timer, another
    /// takes over the next one, so every timer runs, none early, without a herd.
    @Test func timersRunAtTheirDeadlinesWithOneWatcher() async throws {
        let consumers = Consumers(threads: 3)
        try await Task.sleep(for: .milliseconds(20))
        let start = ContinuousClock.now
        let delays = [60, 20, 40, 40, 80]
        for (job, delay) in delays.enumerated() {
            consumers.board.add(job, after: .milliseconds(delay))
        }
        // The wake-ups the adds cause (a sleeper taking the watch) are not counted.
        try await Task.sleep(for: .milliseconds(5))
        let before = consumers.board.threadWakeUps
        try await consumers.waitUntil(taken: delays.count)
        let taken = consumers.taken.withLock { $0 }
        // Soonest first (threads taking equal deadlines may record them in either order).
        #expect(taken.map { delays[$0.job] } == [20, 40, 40, 60, 80])
        for entry in taken {
            #expect(entry.at - start >= .milliseconds(delays[entry.job]), "job \(entry.job) ran early")
        }
        // Four distinct deadlines: two wake-ups each (the watcher, and the sleeper taking
        // the watch over), where every thread waking for every deadline made 12 or more.
        let wakeUps = consumers.board.threadWakeUps - before
        #expect(wakeUps <= 10, "\(wakeUps) wake-ups for 5 timers")
        try await consumers.stop()
    }

    /// A deadline earlier than the watched one wakes a sleeper to watch it.
    @Test func anEarlierDeadlineIsNotMissedBehindALaterOne() async throws {
        let consumers = Consumers(threads: 2)
        consumers.board.add(0, after: .seconds(600))
        try await Task.sleep(for: .milliseconds(20))
        let start = ContinuousClock.now
        consumers.board.add(1, after: .milliseconds(30))
        try await consumers.waitUntil(taken: 1, timeout: .seconds(5))
        let taken = consumers.taken.withLock { $0 }
        #expect(taken.map(\.job) == [1])
        #expect(taken.first.map { $0.at - start < .seconds(2) } == true)
        try await consumers.stop()
    }

    /// Jobs and timers from several producers at once: every one is taken exactly
    /// once and no timer before its deadline (a lost wake-up would leave some behind).
    @Test func concurrentJobsAndTimersAreAllTakenOnTime() async throws {
        let consumers = Consumers(threads: 3)
        let start = ContinuousClock.now
        let perProducer = 500
        // Half the jobs get a random delay up to 30 ms.
        var generator = SystemRandomNumberGenerator()
        let plan: [[(job: Int, delay: Duration?)]] = (0..<4).map { producer in
            (0..<perProducer).map { index in
                (producer * perProducer + index, Bool.random(using: &generator) ? .microseconds(Int.random(in: 0...30_000, using: &generator)) : nil)
            }
        }
        let board = consumers.board
        await withTaskGroup(of: Void.self) { group in
            for jobs in plan {
                group.addTask {
                    for (index, entry) in jobs.enumerated() {
                        board.add(entry.job, after: entry.delay)
                        if index % 50 == 0 { try? await Task.sleep(for: .milliseconds(1)) }
                    }
                }
            }
        }
        try await consumers.waitUntil(taken: 4 * perProducer)
        let taken = consumers.taken.withLock { $0 }
        #expect(taken.count == 4 * perProducer)
        #expect(Set(taken.map(\.job)) == Set(0..<(4 * perProducer)))
        let timers = Dictionary(uniqueKeysWithValues: plan.joined().compactMap { entry in entry.delay.map { (entry.job, $0) } })
        let early = taken.filter { entry in timers[entry.job].map { entry.at - start < $0 } ?? false }
        #expect(early.isEmpty, "\(early.count) timers ran early")
        try await consumers.stop()
    }

    @Test func stopEndsEveryThread() async throws {
        let consumers = Consumers(threads: 3)
        consumers.board.add(0, after: .seconds(600))
        try await Task.sleep(for: .milliseconds(20))
        consumers.board.stop()
        for _ in 0..<1000 where consumers.exited.load(ordering: .sequentiallyConsistent) < 3 {
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(consumers.exited.load(ordering: .sequentiallyConsistent) == 3)
    }
}
