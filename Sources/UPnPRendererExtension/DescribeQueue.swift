/// Which device descriptions are fetched, and when: a fixed number at once, one per host
/// at a time, a bounded wait list with the newest announcement of a device replacing its
/// older one, and a pause for a host whose description could not be read.
///
/// SSDP announcements are free to send and a description fetch holds a socket for up
/// to its timeout, so without this a LAN host announcing made-up devices (from addresses
/// that never answer) could open sockets until the daemon had none left.
struct DescribeQueue: Sendable {
    /// One device to describe.
    struct Job: Sendable, Equatable {
        var id: String
        var host: String
    }

    /// Fetches at once.
    let concurrency: Int
    /// Devices waiting, in all and per host.
    let maximumWaiting: Int
    let maximumWaitingPerHost: Int
    /// How long a host whose description failed is not asked again: ``firstFailurePause`` after
    /// one failure, doubling with each failure in a row up to this. A device that answers
    /// SSDP a moment before its web server (rygel starting) is described seconds later; a host
    /// that never answers costs one fetch per this long.
    let failurePause: Duration
    let firstFailurePause: Duration
    /// Hosts paused, at most this many remembered (the oldest pause is forgotten first).
    let maximumPausedHosts: Int

    private var waiting: [Job] = []
    private var running: [String: String] = [:]
    private var paused: [String: Duration] = [:]
    /// Failures in a row, by host (forgotten with a success, or with the host's pause).
    private var failures: [String: Int] = [:]
    /// Fetches started since the queue was made (for tests and the benchmark).
    private(set) var started = 0
    /// Announcements not queued, by reason (for tests and the report).
    private(set) var refused: [String: Int] = [:]

    init(
        concurrency: Int = 4, maximumWaiting: Int = 64, maximumWaitingPerHost: Int = 4, firstFailurePause: Duration = .seconds(2),
        failurePause: Duration = .seconds(30), maximumPausedHosts: Int = 256
    ) {
        self.firstFailurePause = min(firstFailurePause, failurePause)
        self.concurrency = max(1, concurrency)
        self.maximumWaiting = maximumWaiting
        self.maximumWaitingPerHost = maximumWaitingPerHost
        self.failurePause = failurePause
        self.maximumPausedHosts = maximumPausedHosts
    }

    /// Fetches running now.
    var runningCount: Int { running.count }
    var waitingCount: Int { waiting.count }

    /// Until when `host` is paused after a failed description; nil when it is not.
    func pausedUntil(host: String) -> Duration? { paused[host] }

    /// Queues `job` (a device announced or changed); a job for the same device already waiting
    /// is replaced. False when it was refused (the host is paused, or the lists are full).
    mutating func enqueue(_ job: Job, now: Duration) -> Bool {
        if let until = paused[job.host] {
            guard until <= now else {
                refused["host paused after a failed description", default: 0] += 1
                return false
            }
            paused[job.host] = nil
        }
        if let index = waiting.firstIndex(where: { $0.id == job.id }) {
            waiting[index] = job
            return true
        }
        guard waiting.count < maximumWaiting else {
            refused["describe queue full", default: 0] += 1
            return false
        }
        guard waiting.lazy.filter({ $0.host == job.host }).count < maximumWaitingPerHost else {
            refused["host has too many devices waiting", default: 0] += 1
            return false
        }
        waiting.append(job)
        return true
    }

    /// The next job to start, if a slot is free and a waiting job's host has none running.
    mutating func next() -> Job? {
        guard running.count < concurrency else { return nil }
        let busy = Set(running.values)
        guard let index = waiting.firstIndex(where: { !busy.contains($0.host) && running[$0.id] == nil }) else { return nil }
        let job = waiting.remove(at: index)
        running[job.id] = job.host
        started += 1
        return job
    }

    /// A fetch ended; a failure pauses its host, longer with each failure in a row.
    mutating func finished(_ job: Job, failed: Bool, now: Duration) {
        running[job.id] = nil
        guard failed else {
            failures[job.host] = nil
            return
        }
        if paused[job.host] == nil, paused.count >= maximumPausedHosts, let oldest = paused.min(by: { $0.value < $1.value })?.key {
            paused[oldest] = nil
            failures[oldest] = nil
        }
        if failures[job.host] == nil, failures.count >= maximumPausedHosts, let forgotten = failures.keys.first(where: { paused[$0] == nil }) {
            failures[forgotten] = nil
        }
        let inARow = min((failures[job.host] ?? 0) + 1, 16)
        failures[job.host] = inARow
        paused[job.host] = now + min(failurePause, firstFailurePause * (1 << (inARow - 1)))
        // What that host still has waiting would fail the same way.
        waiting.removeAll { $0.host == job.host }
    }

    /// Forgets a device that went (its waiting job, if any).
    mutating func remove(id: String) {
        waiting.removeAll { $0.id == id }
    }
}
