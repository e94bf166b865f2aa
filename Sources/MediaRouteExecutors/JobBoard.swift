@_spi(ExperimentalCustomExecutors) import _Concurrency

/// The jobs of one executor and the threads that wait for them: a
/// ``JobQueue`` behind a ``ConditionLock``. Both executors are this board plus
/// the threads that take from it.
final class JobBoard: @unchecked Sendable {
    // @unchecked: `queue`, `stopped`, `jobsTaken` and `timersScheduled` are only
    // read or written with `lock` held; `lock` is a constant.
    private let lock = ConditionLock()
    private var queue = JobQueue<UnownedJob>()
    private var stopped = false
    private var jobsTaken: UInt64 = 0
    private var timersScheduled: UInt64 = 0

    /// Jobs handed to threads so far.
    var completedJobs: UInt64 { lock.withLock { jobsTaken } }

    /// Jobs that were given a deadline (`Task.sleep`), so far.
    var scheduledTimers: UInt64 { lock.withLock { timersScheduled } }

    /// A job to run now, or, with a delay, once it has passed. A delay in a
    /// clock whose durations are not `Duration` (nil) cannot be measured here;
    /// such a job runs at once, as after a spurious wake-up.
    func add(_ job: UnownedJob, after delay: Duration? = nil) {
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

    /// The next due job, sleeping until there is one; nil once ``stop()`` was called.
    func next() -> UnownedJob? {
        lock.withLock {
            while !stopped {
                if let job = queue.next(at: .now) {
                    jobsTaken &+= 1
                    // Another job may be waiting too: let a sleeping thread take it.
                    if !queue.isEmpty { lock.signal() }
                    return job
                }
                lock.wait(until: queue.nextDeadline)
            }
            // Pass the stop on to the next sleeper.
            lock.signal()
            return nil
        }
    }

    /// Makes ``next()`` return nil, now and from now on, until ``restart()``.
    func stop() {
        lock.withLock {
            stopped = true
            lock.signal()
        }
    }

    func restart() {
        lock.withLock { stopped = false }
    }
}

extension JobBoard {
    /// The delay until `instant` as a `Duration`, for the `SchedulingExecutor` requirements.
    static func delay<C: Clock>(until instant: C.Instant, on clock: C) -> Duration? {
        clock.now.duration(to: instant) as? Duration
    }
}
