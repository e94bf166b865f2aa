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

/// What a descriptor is ready for.
public struct IOEvents: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Bytes (or a connection) to read.
    public static let readable = IOEvents(rawValue: 1 << 0)
    /// Room to write.
    public static let writable = IOEvents(rawValue: 1 << 1)
    /// The peer closed its end (reported whether asked for or not).
    public static let hangup = IOEvents(rawValue: 1 << 2)
    /// An error on the descriptor (reported whether asked for or not).
    public static let error = IOEvents(rawValue: 1 << 3)
}



extension IOEvents {
    var epollMask: UInt32 {
        var mask: UInt32 = 0
        if contains(.readable) { mask |= mr_epoll_in }
        if contains(.writable) { mask |= mr_epoll_out }
        return mask
    }

    init(epoll mask: UInt32) {
        var events: IOEvents = []
        if mask & mr_epoll_in != 0 { events.insert(.readable) }
        if mask & mr_epoll_out != 0 { events.insert(.writable) }
        if mask & (mr_epoll_hup | mr_epoll_rdhup) != 0 { events.insert(.hangup) }
        if mask & mr_epoll_err != 0 { events.insert(.error) }
        self = events
    }
}

/// A descriptor the reactor could not watch.
public struct IOReactorError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The `errno` of the failed `epoll_ctl`.
    public let errno: Int32
    public let message: String

    init(errno: Int32, _ message: String) {
        self.errno = errno
        self.message = message
    }

    public var description: String { "\(message) (errno \(errno))" }
}
