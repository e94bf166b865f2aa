#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
import MediaClock
import MediaDevice
import RoutingModel

/// Something people do together, e.g. watch one movie: `Codable`, so it travels to every participant.
public protocol GroupActivity: Codable, Sendable, Equatable {
    var metadata: GroupActivityMetadata { get }
    /// The media item the activity plays; playback commands carry it.
    var itemID: String { get }
}
