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
final class WorkerPoolExecutor: TaskExecutor, SchedulingExecutor, Sendable {
    private let jobs = JobBoard<UnownedJob>()
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
    var completedJobs: UInt64 { jobs.completedJobs }

    /// Jobs that were given a deadline (`Task.sleep`), so far.
    var scheduledTimers: UInt64 { jobs.scheduledTimers }

    func enqueue(_ job: consuming ExecutorJob) {
        jobs.add(UnownedJob(job))
    }

    func enqueue<C: Clock>(_ job: consuming ExecutorJob, at instant: C.Instant, tolerance: C.Duration?, clock: C) {
        jobs.add(UnownedJob(job), after: JobBoard<UnownedJob>.delay(until: instant, on: clock))
    }

    func enqueue<C: Clock>(_ job: consuming ExecutorJob, after delay: C.Duration, tolerance: C.Duration?, clock: C) {
        jobs.add(UnownedJob(job), after: delay as? Duration)
    }

    private func work() {
        let executor = asUnownedTaskExecutor()
        while let job = jobs.next() {
            job.runSynchronously(on: executor)
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
