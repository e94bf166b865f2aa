#if canImport(Glibc)
import Glibc
#endif
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// What one server lets its peers hold: connections in all and per peer address, and how
/// long a request may take to arrive whole.
public struct HTTPServerLimits: Sendable, Equatable {
    /// Connections open at once; one more is closed as soon as it is accepted.
    public var maximumConnections: Int
    /// Connections open at once from one peer address.
    public var maximumConnectionsPerHost: Int
    /// From a connection's start (or the end of its last answer) to its next request's last
    /// byte: a peer that sends a byte now and then (slowloris) is closed when it passes, however
    /// often it sends. An answer being sent (a file, a live stream) is not limited by it.
    public var requestDeadline: Duration

    public init(maximumConnections: Int = 64, maximumConnectionsPerHost: Int = 8, requestDeadline: Duration = .seconds(10)) {
        self.maximumConnections = maximumConnections
        self.maximumConnectionsPerHost = maximumConnectionsPerHost
        self.requestDeadline = requestDeadline
    }
}
