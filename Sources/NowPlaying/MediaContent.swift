#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// How long content lasts.
public enum MediaDuration: Sendable, Equatable, Hashable {
    /// A known length in seconds.
    case finite(Double)
    /// A live stream without an end.
    case live

    /// The length in seconds, nil when live.
    public var seconds: Double? {
        if case .finite(let seconds) = self { return seconds }
        return nil
    }
}

/// Image bytes for artwork, as loaded.
public struct ArtworkRepresentation: Sendable, Equatable {
    /// The encoded image (PNG, JPEG, …).
    public var data: Data
    /// Its MIME type when known.
    public var mimeType: String?

    /// - Throws: ``RemoteMediaSessionError/Code/invalidAttributes`` for empty data.
    public init(data: Data, mimeType: String? = nil) throws {
        guard !data.isEmpty else { throw RemoteMediaSessionError(.invalidAttributes, "empty artwork") }
        self.data = data
        self.mimeType = mimeType
    }
}

/// Artwork of content, loaded only when something shows it.
///
/// Give a `url` when the image is reachable by URL (MPRIS clients fetch it
/// themselves), a `loader` when the extension has to produce the bytes; the
/// loader is called lazily, at most once per artwork id and size, by whoever
/// displays it (the MPRIS bridge caches the result).
public struct Artwork: Sendable {
    /// A pixel size a display asks for.
    public struct Size: Sendable, Hashable {
        public var width: Int
        public var height: Int
        public init(width: Int, height: Int) {
            self.width = width
            self.height = height
        }
    }

    public var id: String
    public var url: URL?
    public var loader: (@Sendable (Size) async throws -> ArtworkRepresentation)?

    public init(id: String, url: URL) {
        self.id = id
        self.url = url
        self.loader = nil
    }

    public init(id: String, url: URL? = nil, loader: @escaping @Sendable (Size) async throws -> ArtworkRepresentation) {
        self.id = id
        self.url = url
        self.loader = loader
    }
}

/// What a remote session is playing.
public protocol MediaContentRepresentable: Sendable {
    var id: String { get }
    var title: String? { get }
    var artist: String? { get }
    var album: String? { get }
    var duration: MediaDuration? { get }
    var artwork: Artwork? { get }
    var isExplicit: Bool { get }
}

/// The kind of media.
public enum MediaContentType: String, Sendable, Hashable, Codable {
    case audio
    case video
}

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
