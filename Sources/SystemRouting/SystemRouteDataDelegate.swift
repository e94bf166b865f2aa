#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
import RoutingModel
import Synchronization
import EventBroadcast

/// Receives data from a data channel.
public protocol SystemRouteDataDelegate: AnyObject, Sendable {
    func dataChannel(_ channel: SystemRouteDataChannel, didReceive data: Data)
}
