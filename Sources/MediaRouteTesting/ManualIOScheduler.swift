public import IOReactor
import Synchronization

/// An ``IOScheduler`` whose time stands still until a test moves it: `advance(by:)` fires the
/// timers that come due, in deadline order, on the caller's thread — as NIO's
/// `NIOAsyncTestingEventLoop` does for event loops. Descriptors are real, so their watches
/// go to the process's reactor; only time is the test's.
public final class ManualIOScheduler: IOScheduler {
    private struct Timer {
        var deadline: ContinuousClock.Instant
        var order: UInt64
        var fire: @Sendable () -> Void
    }

    private struct State {
        var elapsed: Duration = .zero
        var timers: [UInt64: Timer] = [:]
        var nextToken: UInt64 = 1
    }

    private let start: ContinuousClock.Instant
    private let monotonicStart: Duration
    private let descriptors: IOReactor
    private let state = Mutex(State())

    /// A scheduler at `monotonic` on the samples' timeline; descriptors are watched by `descriptors`.
    public init(monotonic: Duration = .seconds(1_000), descriptors: IOReactor = .shared) {
        start = ContinuousClock.now
        monotonicStart = monotonic
        self.descriptors = descriptors
    }

    public var now: ContinuousClock.Instant { start + state.withLock { $0.elapsed } }

    public var monotonicNow: Duration { monotonicStart + state.withLock { $0.elapsed } }

    /// The timers that have not fired.
    public var pendingTimers: Int { state.withLock { $0.timers.count } }

    public func watch(_ fd: Int32, for events: IOEvents, _ handler: @escaping @Sendable (IOEvents) -> Void) throws(IOReactorError) -> IOWatch {
        try descriptors.watch(fd, for: events, handler)
    }

    @discardableResult
    public func schedule(at deadline: ContinuousClock.Instant, _ fire: @escaping @Sendable () -> Void) -> IOTimer {
        let token = state.withLock { state -> UInt64 in
            defer { state.nextToken += 1 }
            state.timers[state.nextToken] = Timer(deadline: deadline, order: state.nextToken, fire: fire)
            return state.nextToken
        }
        return IOTimer { [weak self] in self?.state.withLock { $0.timers.removeValue(forKey: token) } != nil }
    }

    /// Runs `work` at once, on the caller's thread.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        work()
    }

    /// Moves time forward by `duration`, firing every timer due by then (and those they
    /// schedule within it) in the order of their deadlines, each with the time at its deadline.
    public func advance(by duration: Duration) {
        let end = state.withLock { $0.elapsed } + duration
        while true {
            let due = state.withLock { state -> (@Sendable () -> Void)? in
                let limit = start + end
                guard let (token, timer) = state.timers.filter({ $0.value.deadline <= limit })
                    .min(by: { ($0.value.deadline, $0.value.order) < ($1.value.deadline, $1.value.order) })
                else { return nil }
                state.timers[token] = nil
                state.elapsed = max(state.elapsed, timer.deadline - start)
                return timer.fire
            }
            guard let due else { break }
            due()
        }
        state.withLock { $0.elapsed = end }
    }
}
