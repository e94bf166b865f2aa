public import RoutingModel
#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// An extension that pins identities: the routing system lists them and forwards what
/// people decide about them.
public protocol IdentityPinning: Sendable {
    /// Everything pinned now, with any identity offered in its place.
    func pinnedIdentities() async -> [PinnedIdentity]
    /// Forgets what is pinned for `deviceID` (the next use is a first use again).
    /// - Returns: how many entries were forgotten.
    func forgetIdentity(of deviceID: String) async -> Int
    /// Pins the identity `deviceID` offered in place of its pinned one.
    /// - Returns: whether one was offered.
    func acceptIdentity(of deviceID: String) async -> Bool
}
