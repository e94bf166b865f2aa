#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
import MediaClock
import MediaDevice
import RoutingModel

/// What a group activity shows people.
public struct GroupActivityMetadata: Sendable, Hashable, Codable {
    public enum ActivityType: String, Sendable, Hashable, Codable {
        case generic, watchTogether, listenTogether
    }

    public var type: ActivityType
    public var title: String?
    public var fallbackURL: URL?

    public init(type: ActivityType = .generic, title: String? = nil, fallbackURL: URL? = nil) {
        self.type = type
        self.title = title
        self.fallbackURL = fallbackURL
    }
}
