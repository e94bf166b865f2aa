#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif

/// A song or other audio item.
public struct MusicContent: MediaContentRepresentable {
    public var id: String
    public var songTitle: String?
    public var artistName: String?
    public var albumName: String?
    public var type: MediaContentType
    public var duration: MediaDuration?
    public var artwork: Artwork?
    public var isExplicit: Bool = false

    public init(
        id: String, songTitle: String? = nil, artistName: String? = nil, albumName: String? = nil,
        type: MediaContentType = .audio, duration: MediaDuration? = nil, artwork: Artwork? = nil
    ) {
        self.id = id
        self.songTitle = songTitle
        self.artistName = artistName
        self.albumName = albumName
        self.type = type
        self.duration = duration
        self.artwork = artwork
    }

    public var title: String? { songTitle }
    public var artist: String? { artistName }
    public var album: String? { albumName }
}
