import CEpoll

/// A timer on the reactor; see ``IOReactor/schedule(at:_:)``.
public final class IOTimer: Sendable {
    private let reactor: IOReactor
    private let token: UInt64

    init(reactor: IOReactor, token: UInt64) {
        self.reactor = reactor
        self.token = token
    }

    /// Stops the timer; returns whether it had not fired yet.
    @discardableResult
    public func cancel() -> Bool { reactor.cancelTimer(token) }
}
