#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What an accepted push did.
public struct PushAcceptance: Sendable, Hashable {
    public var event: PushEventKind
    public var sessionID: String
    /// For `start`: the new session's update token, for the sender to use next.
    public var updateToken: PushToken?
}
