#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import RoutingModel
import MediaClock
import Synchronization

/// A route becoming active or ending.
public struct SystemRouteEvent: Sendable {
    public let reason: SystemRouteEventReason
    public let route: SystemRoute
    /// Why a route ended unrequested (device lost, connection failed); nil otherwise.
    public let error: MediaDeviceError?
}
