@testable import MediaRouteExecutors
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// An actor whose jobs run on a `MainThreadExecutor` driven by a thread of the test's own.
private actor LoopBound {
    let loop: MainThreadExecutor
    var values: [Int] = []
    init(loop: MainThreadExecutor) { self.loop = loop }
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    func record(_ value: Int) -> Bool {
        values.append(value)
        return loop.isIsolatingCurrentContext() == true
    }
}

/// The thread that calls `run()`, started with pthread (a Foundation Thread would pull in Foundation).
private final class RunThread: Sendable {
    let loop: MainThreadExecutor
    let finished = Mutex(false)
    init(loop: MainThreadExecutor) { self.loop = loop }

    func start() {
        let context = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        _ = pthread_create(&thread, nil, { context in
            let runner = Unmanaged<RunThread>.fromOpaque(context!).takeRetainedValue()
            try? runner.loop.run()
            runner.finished.withLock { $0 = true }
            return nil
        }, context)
        pthread_detach(thread)
    }
}

@Suite struct ExecutorTests {
    @Test func aPoolRunsManyConcurrentTasks() async {
        let pool = WorkerPoolExecutor(threads: 2)
        #expect(pool.threadCount == 2)
        let sum = await withTaskGroup(of: Int.self) { group in
            for value in 1...1000 {
                group.addTask(executorPreference: pool) { value }
            }
            return await group.reduce(0, +)
        }
        #expect(sum == 500_500)
        #expect(pool.completedJobs >= 1000)
    }

    @Test func aPoolRunsWorkOffTheCallersThread() async {
        let pool = WorkerPoolExecutor(threads: 1)
        let before = pool.completedJobs
        let outside = pthread_self()
        let sameThread = await Task(executorPreference: pool) { pthread_equal(pthread_self(), outside) != 0 }.value
        #expect(!sameThread)
        #expect(pool.completedJobs > before)
    }

    /// `Task.sleep` lands in the pool's timer heap; each sleeper wakes no earlier than asked.
    @Test func sleepsOnAPoolWakeAfterTheirDelay() async throws {
        let pool = WorkerPoolExecutor(threads: 2)
        let clock = ContinuousClock()
        let start = clock.now
        let woken = try await withThrowingTaskGroup(of: Duration.self) { group in
            for delay in [30, 10, 20] {
                group.addTask(executorPreference: pool) {
                    try await Task.sleep(for: .milliseconds(delay))
                    return clock.now - start
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(woken.count == 3)
        #expect(woken.allSatisfy { $0 >= .milliseconds(10) })
        #expect(woken.max()! >= .milliseconds(30))
        // The sleeps were this pool's timers (a task's executor preference takes its sleeps too).
        #expect(pool.scheduledTimers == 3)
    }

    @Test func theMainExecutorRunsActorJobsOnItsThreadUntilStopped() async throws {
        let loop = MainThreadExecutor()
        let runner = RunThread(loop: loop)
        #expect(loop.isIsolatingCurrentContext() == false)
        runner.start()
        let actor = LoopBound(loop: loop)
        for value in 0..<200 {
            #expect(await actor.record(value))
        }
        #expect(await actor.values == Array(0..<200))
        loop.stop()
        for _ in 0..<200 where !runner.finished.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
        #expect(runner.finished.withLock { $0 })
    }
}
