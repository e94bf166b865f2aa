#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Logging
import RoutingModel

/// The outcome of ``SystemRouteController/prepareRouteSelectionForPlayback(content:suggestions:presenter:automaticallySelectsLongFormRoute:discoveryTime:hour:)``.
public enum RouteSelection: Sendable {
    /// Play on the box.
    case local
    /// Play on this route (already active).
    case external(SystemRoute)
    /// The person closed the picker without choosing.
    case cancelled
}
