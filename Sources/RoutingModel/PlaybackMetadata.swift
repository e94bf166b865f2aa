#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// What is playing.
public struct PlaybackMetadata: Sendable, Equatable, Codable {
    public var title: String?
    public var artist: String?
    public var album: String?
    public var artworkURL: URL?
    /// Duration in seconds; nil when unknown or live.
    public var duration: Double?
    public var isLive: Bool
    public var contentURL: URL?

    public init(
        title: String? = nil, artist: String? = nil, album: String? = nil, artworkURL: URL? = nil,
        duration: Double? = nil, isLive: Bool = false, contentURL: URL? = nil
    ) {
        self.title = title
        self.artist = artist
        self.album = album
        self.artworkURL = artworkURL
        self.duration = duration
        self.isLive = isLive
        self.contentURL = contentURL
    }
}
