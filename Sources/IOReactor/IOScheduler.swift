#if canImport(Glibc)
import Glibc
#endif

/// What code that runs on the reactor needs of it: descriptors watched, timers, and the time
/// they run on. ``IOReactor`` is the production one, on the machine's clocks; a test gives
/// such code `ManualIOScheduler` (the MediaRouteTesting product), whose timers fire only when
/// the test advances its time, as NIO's `NIOAsyncTestingEventLoop` does for event loops.
public protocol IOScheduler: Sendable {
    /// Now, on the clock timers are scheduled on.
    var now: ContinuousClock.Instant { get }
    /// Now on CLOCK_MONOTONIC, as a duration since boot: the timeline samples are stamped on.
    var monotonicNow: Duration { get }
    /// Calls `handler` whenever `fd` is ready for one of `events` (see ``IOReactor/watch(_:for:_:)``).
    func watch(_ fd: Int32, for events: IOEvents, _ handler: @escaping @Sendable (IOEvents) -> Void) throws(IOReactorError) -> IOWatch
    /// Calls `fire` at `deadline` (at once if it has passed).
    @discardableResult
    func schedule(at deadline: ContinuousClock.Instant, _ fire: @escaping @Sendable () -> Void) -> IOTimer
    /// Runs `work` after the handlers and work already due (on the reactor thread for ``IOReactor``).
    func execute(_ work: @escaping @Sendable () -> Void)
}

extension IOReactor: IOScheduler {
    public var now: ContinuousClock.Instant { .now }

    public var monotonicNow: Duration {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }
}
