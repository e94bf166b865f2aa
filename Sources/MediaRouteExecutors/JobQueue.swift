/// Jobs ready to run, in arrival order, and jobs waiting for a deadline, soonest
/// first. Not thread-safe: its owner guards it with a ``ConditionLock``.
/// Generic so tests can queue plain values (an `ExecutorJob` only the runtime makes).
struct JobQueue<Job> {
    private var ready: [Job] = []
    private var readHead = 0
    /// A binary min-heap on (deadline, arrival), so equal deadlines keep their order.
    private var timers: [(deadline: MonotonicInstant, sequence: UInt64, job: Job)] = []
    private var sequence: UInt64 = 0

    var isEmpty: Bool { readHead == ready.count && timers.isEmpty }

    /// The earliest deadline, or nil when no timer is waiting.
    var nextDeadline: MonotonicInstant? { timers.first?.deadline }

    /// Whether ``next(at:)`` would return a job at `now`.
    func hasDue(at now: MonotonicInstant) -> Bool {
        readHead < ready.count || timers.first.map { $0.deadline <= now } ?? false
    }

    mutating func append(_ job: Job) {
        ready.append(job)
    }

    mutating func append(_ job: Job, at deadline: MonotonicInstant) {
        sequence &+= 1
        timers.append((deadline, sequence, job))
        var child = timers.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.before(timers[child], timers[parent]) else { break }
            timers.swapAt(child, parent)
            child = parent
        }
    }

    /// The next job to run at `now`: a due timer first (it has waited longest), else the oldest ready job.
    mutating func next(at now: MonotonicInstant) -> Job? {
        if let first = timers.first, first.deadline <= now {
            return popTimer()
        }
        guard readHead < ready.count else { return nil }
        let job = ready[readHead]
        readHead += 1
        if readHead == ready.count {
            ready.removeAll(keepingCapacity: ready.capacity <= 1024)
            readHead = 0
        }
        return job
    }

    private static func before(
        _ lhs: (deadline: MonotonicInstant, sequence: UInt64, job: Job),
        _ rhs: (deadline: MonotonicInstant, sequence: UInt64, job: Job)
    ) -> Bool {
        lhs.deadline == rhs.deadline ? lhs.sequence < rhs.sequence : lhs.deadline < rhs.deadline
    }

    private mutating func popTimer() -> Job {
        let job = timers[0].job
        let last = timers.removeLast()
        if !timers.isEmpty {
            timers[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1
                let right = left + 1
                var smallest = parent
                if left < timers.count, Self.before(timers[left], timers[smallest]) { smallest = left }
                if right < timers.count, Self.before(timers[right], timers[smallest]) { smallest = right }
                if smallest == parent { break }
                timers.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return job
    }
}
