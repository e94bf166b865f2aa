@_spi(ExperimentalCustomExecutors) @_spi(ExperimentalScheduling) import _Concurrency
#if canImport(Glibc)
import Glibc
#endif

/// The main actor's executor for `mediarouted`: jobs run on the thread that
/// calls ``run()`` (the process's main thread), which sleeps on a condition
/// variable when there is nothing to do — no libdispatch main queue, no timers.
final class MainThreadExecutor: MainExecutor, SchedulingExecutor, @unchecked Sendable {
    // @unchecked: `queue`, `stopped` and `thread` are only read or written with
    // `lock` held; `lock` is a constant.
    private let lock = ConditionLock()
    private var queue = JobQueue<UnownedJob>()
    private var stopped = false
    /// The thread inside ``run()``.
    private var thread: pthread_t?

    init() {}

    var isMainExecutor: Bool { true }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        lock.withLock {
            queue.append(job)
            lock.signal()
        }
    }

    func enqueue<C: Clock>(_ job: consuming ExecutorJob, at instant: C.Instant, tolerance: C.Duration?, clock: C) {
        schedule(UnownedJob(job), after: Duration.converting(clock.now.duration(to: instant)))
    }

    func enqueue<C: Clock>(_ job: consuming ExecutorJob, after delay: C.Duration, tolerance: C.Duration?, clock: C) {
        schedule(UnownedJob(job), after: Duration.converting(delay))
    }

    private func schedule(_ job: UnownedJob, after delay: Duration?) {
        lock.withLock {
            if let delay { queue.append(job, at: .after(delay)) } else { queue.append(job) }
            lock.signal()
        }
    }

    /// Runs main-actor jobs on the calling thread until ``stop()``.
    func run() throws {
        let executor = asUnownedSerialExecutor()
        lock.lock()
        stopped = false
        thread = pthread_self()
        while !stopped {
            if let job = queue.next(at: .now) {
                lock.unlock()
                job.runSynchronously(on: executor)
                lock.lock()
            } else {
                lock.wait(until: queue.nextDeadline)
            }
        }
        thread = nil
        lock.unlock()
    }

    func stop() {
        lock.withLock {
            stopped = true
            lock.signal()
        }
    }

    /// Main-actor code runs only on the thread inside ``run()``.
    func checkIsolated() {
        precondition(onRunThread, "not on the thread that runs the main actor's jobs")
    }

    func isIsolatingCurrentContext() -> Bool? { onRunThread }

    private var onRunThread: Bool {
        lock.withLock { thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }
}
