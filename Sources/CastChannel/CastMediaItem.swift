#if canImport(FoundationEssentials)
internal import FoundationEssentials
#else
internal import Foundation
#endif

/// A media item as a `LOAD` or `QUEUE_INSERT` carries it.
public struct CastMediaItem: Sendable, Equatable {
    /// `BUFFERED` for a file with an end, `LIVE` for a stream.
    public enum StreamType: String, Sendable, Equatable, Codable {
        case buffered = "BUFFERED"
        case live = "LIVE"
    }

    public var contentID: String
    public var contentType: String
    public var streamType: StreamType
    public var title: String?
    public var artist: String?
    public var album: String?
    public var imageURL: String?
    /// Seconds, when known.
    public var duration: Double?

    public init(
        contentID: String, contentType: String, streamType: StreamType = .buffered, title: String? = nil, artist: String? = nil,
        album: String? = nil, imageURL: String? = nil, duration: Double? = nil
    ) {
        self.contentID = contentID
        self.contentType = contentType
        self.streamType = streamType
        self.title = title
        self.artist = artist
        self.album = album
        self.imageURL = imageURL
        self.duration = duration
    }

    /// Music metadata (type 3: title, artist, album) for audio, generic (type 0: title,
    /// subtitle) for anything else, as receivers show them.
    var wire: WireMedia {
        let isAudio = contentType.lowercased().hasPrefix("audio/")
        let metadata = WireMetadata(
            metadataType: isAudio ? 3 : 0, title: title, subtitle: isAudio ? nil : artist, artist: isAudio ? artist : nil,
            albumName: isAudio ? album : nil, images: imageURL.map { [WireImage(url: $0)] })
        let hasMetadata = title != nil || artist != nil || album != nil || imageURL != nil
        let finiteDuration = duration.flatMap { $0.isFinite && $0 >= 0 ? $0 : nil }
        return WireMedia(
            contentId: contentID, contentType: contentType, streamType: streamType.rawValue, metadata: hasMetadata ? metadata : nil,
            duration: finiteDuration)
    }
}
