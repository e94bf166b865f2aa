#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif

/// A film, episode or other video item.
public struct VideoContent: MediaContentRepresentable {
    public var id: String
    public var title: String?
    /// The series for an episode, the studio or channel otherwise.
    public var subtitle: String?
    public var duration: MediaDuration?
    public var artwork: Artwork?
    public var isExplicit: Bool = false

    public init(id: String, title: String? = nil, subtitle: String? = nil, duration: MediaDuration? = nil, artwork: Artwork? = nil) {
        self.id = id
        self.title = title
        self.subtitle = subtitle
        self.duration = duration
        self.artwork = artwork
    }

    public var artist: String? { subtitle }
    public var album: String? { nil }
}
