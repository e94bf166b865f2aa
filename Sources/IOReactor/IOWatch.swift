import CEpoll

/// A file descriptor the reactor watches; see ``IOReactor/watch(_:for:_:)``.
public final class IOWatch: Sendable {
    private let reactor: IOReactor
    /// The descriptor watched (still the caller's: the watch never closes it).
    public let fd: Int32
    private let token: UInt64

    init(reactor: IOReactor, fd: Int32, token: UInt64) {
        self.reactor = reactor
        self.fd = fd
        self.token = token
    }

    /// Watches for `events` from now on (`[]`: for nothing but errors and hang-ups, as
    /// while a reader holds back to read in batches).
    public func setInterest(_ events: IOEvents) {
        reactor.modify(fd, token: token, to: events)
    }

    /// Stops watching. On the reactor thread the handler is not called again once this
    /// returns; from another thread a call already under way may still finish, so
    /// `then` (run on the reactor thread once no call can be under way) is where to
    /// close the descriptor.
    public func cancel(then: (@Sendable () -> Void)? = nil) {
        _ = reactor.remove(fd, token: token)
        guard let then else { return }
        if reactor.isCurrent { then() } else { reactor.execute(then) }
    }
}
