import CNetlink
#if canImport(Glibc)
import Glibc
#endif

/// Why a transport cannot run on this machine.
public struct TransportUnavailable: Error, Sendable, Hashable, CustomStringConvertible {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}
