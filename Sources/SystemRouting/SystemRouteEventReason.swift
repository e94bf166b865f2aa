#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import RoutingModel
import MediaClock
import Synchronization

/// Why a route event happened.
public enum SystemRouteEventReason: Sendable, Hashable {
    /// A route became active: keep it and start sessions on it.
    case activate
    /// A route ended: drop it.
    case deactivate
}
