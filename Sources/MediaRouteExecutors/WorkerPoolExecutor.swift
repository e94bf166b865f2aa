@_spi(ExperimentalCustomExecutors) @_spi(ExperimentalScheduling) import _Concurrency
#if canImport(Glibc)
import Glibc
#endif

/// Swift concurrency's default executor for `mediarouted`: a fixed set of
/// threads that sleep on one condition variable until a job is enqueued or the
/// earliest `Task.sleep` deadline passes.
///
/// The stock executor runs on libdispatch's worker pool, whose Linux monitor
/// re-arms a one-second timer for the life of the process: an idle daemon woke
/// up once a second for nothing. Here an idle process has no timer armed at all.
final class WorkerPoolExecutor: TaskExecutor, SchedulingExecutor, @unchecked Sendable {
    // @unchecked: `queue` and `jobsRun` are only read or written with `lock` held;
    // `lock` and `threadCount` are constants.
    private let lock = ConditionLock()
    private var queue = JobQueue<UnownedJob>()
    private var jobsRun: UInt64 = 0
    private var timersScheduled: UInt64 = 0
    /// How many threads run jobs.
    let threadCount: Int

    /// Starts `threads` worker threads (default: one per online CPU, at least two).
    init(threads: Int? = nil) {
        threadCount = max(1, threads ?? max(2, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))))
        for _ in 0..<threadCount {
            let context = Unmanaged.passRetained(WorkerStart(pool: self)).toOpaque()
            var thread = pthread_t()
            let result = pthread_create(&thread, nil, { context in
                let start = Unmanaged<WorkerStart>.fromOpaque(context!).takeRetainedValue()
                start.pool.work()
                return nil
            }, context)
            if result == 0 {
                pthread_detach(thread)
            } else {
                Unmanaged<WorkerStart>.fromOpaque(context).release()
                fatalError("WorkerPoolExecutor: cannot start a worker thread (error \(result))")
            }
        }
    }

    /// Jobs run so far (for tests and diagnostics).
    var completedJobs: UInt64 { lock.withLock { jobsRun } }

    /// Jobs that were given a deadline (`Task.sleep`), so far.
    var scheduledTimers: UInt64 { lock.withLock { timersScheduled } }

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

    /// A delay in a clock whose durations are not `Duration` cannot be measured
    /// here; such a job runs at once, as a spurious wake-up would.
    private func schedule(_ job: UnownedJob, after delay: Duration?) {
        lock.withLock {
            if let delay {
                timersScheduled &+= 1
                queue.append(job, at: .after(delay))
            } else {
                queue.append(job)
            }
            lock.signal()
        }
    }

    private func work() {
        let executor = asUnownedTaskExecutor()
        lock.lock()
        while true {
            if let job = queue.next(at: .now) {
                jobsRun &+= 1
                // Another job may be waiting too: let a sleeping worker take it.
                if !queue.isEmpty { lock.signal() }
                lock.unlock()
                job.runSynchronously(on: executor)
                lock.lock()
            } else {
                lock.wait(until: queue.nextDeadline)
            }
        }
    }
}

/// What a worker thread needs to start; passed through `pthread_create`'s context pointer.
private final class WorkerStart: Sendable {
    let pool: WorkerPoolExecutor

    init(pool: WorkerPoolExecutor) {
        self.pool = pool
    }
}
