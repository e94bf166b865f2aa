#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
import MediaClock
import MediaDevice
import RoutingModel

/// How the person wants to start an activity.
public enum GroupActivityActivationResult: Sendable, Hashable {
    /// Share it with the group.
    case activationPreferred
    /// No group to share with, or the person prefers to play alone.
    case activationDisabled
    /// The person cancelled.
    case cancelled
}
