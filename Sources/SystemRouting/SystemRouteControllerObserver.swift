#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import RoutingModel
import MediaClock
import Synchronization

/// Receives route events from a ``SystemRouteController``.
public protocol SystemRouteControllerObserver: AnyObject, Sendable {
    /// Handles one event; return false when the observer could not act on it (it is logged).
    func systemRouteController(_ controller: SystemRouteController, handle event: SystemRouteEvent) async -> Bool
}
