import CEpoll

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
