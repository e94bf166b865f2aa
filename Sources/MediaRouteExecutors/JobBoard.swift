@_spi(ExperimentalCustomExecutors) import _Concurrency

/// The jobs of one executor and the threads that wait for them: a
/// ``JobQueue`` behind a ``ConditionLock``. Both executors are a board of
/// `UnownedJob`s plus the threads that take from it; generic so tests can post
/// plain values.
///
/// A sleeping thread is woken only when there is something for it: a job, or a
/// deadline earlier than the one already watched. One sleeper at a time waits
/// for the earliest deadline, the others until signalled (on a condition
/// variable of their own), so a timer wakes one thread, not all of them, and a
/// job wakes a thread that was not watching.
final class JobBoard<Job>: @unchecked Sendable {
    // @unchecked: every stored `var` is only read or written with `lock` held;
    // `lock` is a constant. Jobs cross threads through the board by design.
    private let lock = ConditionLock()
    private var queue = JobQueue<Job>()
    private var stopped = false
    private var jobsTaken: UInt64 = 0
    private var timersScheduled: UInt64 = 0
    private var wakeUps: UInt64 = 0
    /// Threads asleep in ``next()`` until signalled.
    private var untimedSleepers = 0
    /// Threads asleep in ``next()`` until a deadline (normally at most one).
    private var timedSleepers = 0
    /// The earliest deadline a sleeper waits for; nil when none waits with a deadline.
    private var watchedDeadline: MonotonicInstant?

    /// Jobs handed to threads so far.
    var completedJobs: UInt64 { lock.withLock { jobsTaken } }

    /// Jobs that were given a deadline (`Task.sleep`), so far.
    var scheduledTimers: UInt64 { lock.withLock { timersScheduled } }

    /// How often a sleeping thread woke up (signalled, deadline, or spuriously), so far.
    var threadWakeUps: UInt64 { lock.withLock { wakeUps } }

    /// A job to run now, or, with a delay, once it has passed. A delay in a
    /// clock whose durations are not `Duration` (nil) cannot be measured here;
    /// such a job runs at once, as after a spurious wake-up.
    func add(_ job: Job, after delay: Duration? = nil) {
        let wake = lock.withLock { () -> ConditionLock.Sleepers? in
            guard let delay else {
                queue.append(job)
                return sleeperForAJob
            }
            timersScheduled &+= 1
            let deadline = MonotonicInstant.after(delay)
            queue.append(job, at: deadline)
            // A later deadline than the watched one is seen when that one passes.
            guard watchedDeadline.map({ deadline < $0 }) ?? true else { return nil }
            return timedSleepers > 0 ? .timed : untimedSleepers > 0 ? .untimed : nil
        }
        // Signalled after unlocking, so the woken thread does not block on the lock at once.
        if let wake { lock.signal(wake) }
    }

    /// Who wakes for a job that is due: a thread that does not watch a deadline, the
    /// watcher only when no one else sleeps (it would hand its watch on). Lock held.
    private var sleeperForAJob: ConditionLock.Sleepers? {
        untimedSleepers > 0 ? .untimed : timedSleepers > 0 ? .timed : nil
    }

    /// The next due job, sleeping until there is one; nil once ``stop()`` was called.
    func next() -> Job? {
        lock.lock()
        while !stopped {
            let now = MonotonicInstant.now
            if let job = queue.next(at: now) {
                jobsTaken &+= 1
                var wake: ConditionLock.Sleepers?
                if queue.hasDue(at: now) {
                    // Another job is due too: a sleeper takes it.
                    wake = sleeperForAJob
                } else if queue.nextDeadline != nil, watchedDeadline == nil, untimedSleepers > 0 {
                    // No one watches the next deadline while this thread runs its job.
                    wake = .untimed
                }
                lock.unlock()
                if let wake { lock.signal(wake) }
                return job
            }
            if let deadline = queue.nextDeadline, watchedDeadline.map({ deadline < $0 }) ?? true {
                watchedDeadline = deadline
                timedSleepers += 1
                lock.wait(until: deadline)
                timedSleepers -= 1
                if watchedDeadline == deadline { watchedDeadline = nil }
            } else {
                untimedSleepers += 1
                lock.wait(until: nil)
                untimedSleepers -= 1
            }
            wakeUps &+= 1
        }
        lock.unlock()
        // Pass the stop on to the next sleeper of each kind.
        lock.signal(.untimed)
        lock.signal(.timed)
        return nil
    }

    /// Makes ``next()`` return nil, now and from now on, until ``restart()``.
    func stop() {
        lock.withLock { stopped = true }
        lock.signal(.untimed)
        lock.signal(.timed)
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
