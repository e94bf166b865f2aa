#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import HTTPServing
import LANTransport
import MediaClock
import Logging
import MediaDevice
import RoutingModel
import Transport
import UPnP

/// A session's event subscriptions, for diagnostics.
public struct GENAStatus: Sendable, Hashable {
    /// Events arrive (else the state is polled).
    public var healthy: Bool
    public var events: Int
    public var renewals: Int
    /// Subscription ids by service kind (`AVTransport`, `RenderingControl`).
    public var subscriptions: [String: String]
    /// The time each subscription was granted, in seconds.
    public var granted: [String: Int]
}
