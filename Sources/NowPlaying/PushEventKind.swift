#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The event of a push payload (`aps.event`).
public enum PushEventKind: String, Sendable, Hashable, Codable {
    case start
    case update
    case end
}
