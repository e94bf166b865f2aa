/// A timer on an ``IOScheduler``; see ``IOScheduler/schedule(at:_:)``.
public final class IOTimer: Sendable {
    private let cancelling: @Sendable () -> Bool

    /// A timer that `cancel` stops (a scheduler's own; ``IOReactor`` makes these itself).
    public init(cancel: @escaping @Sendable () -> Bool) {
        cancelling = cancel
    }

    /// Stops the timer; returns whether it had not fired yet.
    @discardableResult
    public func cancel() -> Bool { cancelling() }
}
