@_spi(ExperimentalCustomExecutors) @_spi(ExperimentalScheduling) import _Concurrency
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The main actor's executor for `mediarouted`: jobs run on the thread that
/// calls ``run()`` (the process's main thread), which sleeps on a condition
/// variable when there is nothing to do — no libdispatch main queue, no timers.
final class MainThreadExecutor: MainExecutor, SchedulingExecutor, Sendable {
    private let jobs = JobBoard<UnownedJob>()
    /// The thread inside ``run()``.
    private let thread = Mutex<pthread_t?>(nil)

    init() {}

    var isMainExecutor: Bool { true }

    func enqueue(_ job: consuming ExecutorJob) {
        jobs.add(UnownedJob(job))
    }

    func enqueue<C: Clock>(_ job: consuming ExecutorJob, at instant: C.Instant, tolerance: C.Duration?, clock: C) {
        jobs.add(UnownedJob(job), after: JobBoard<UnownedJob>.delay(until: instant, on: clock))
    }

    func enqueue<C: Clock>(_ job: consuming ExecutorJob, after delay: C.Duration, tolerance: C.Duration?, clock: C) {
        jobs.add(UnownedJob(job), after: delay as? Duration)
    }

    /// Runs main-actor jobs on the calling thread until ``stop()``.
    func run() throws {
        let executor = asUnownedSerialExecutor()
        jobs.restart()
        thread.withLock { $0 = pthread_self() }
        defer { thread.withLock { $0 = nil } }
        while let job = jobs.next() {
            job.runSynchronously(on: executor)
        }
    }

    func stop() {
        jobs.stop()
    }

    /// Main-actor code runs only on the thread inside ``run()``.
    func checkIsolated() {
        precondition(onRunThread, "not on the thread that runs the main actor's jobs")
    }

    func isIsolatingCurrentContext() -> Bool? { onRunThread }

    private var onRunThread: Bool {
        thread.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }
}
