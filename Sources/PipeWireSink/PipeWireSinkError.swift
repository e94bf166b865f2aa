#if canImport(Glibc)
import Glibc
#endif
import CPipeWire
import DBus
import MediaRouteBusAPI
import RoutingModel
import Synchronization

/// Why the sink could not start.
public struct PipeWireSinkError: Error, Sendable, Hashable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
