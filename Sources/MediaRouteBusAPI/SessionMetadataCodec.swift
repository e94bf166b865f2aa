#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
public import DBus
public import RoutingModel

/// `Session1.StartWithMetadata`'s `a{sv}`: what the app says it plays.
public enum SessionMetadataCodec {
    public static func encode(_ metadata: PlaybackMetadata) -> DBusValue {
        var entries: [String: DBusValue] = [:]
        if let title = metadata.title { entries["title"] = .string(title) }
        if let artist = metadata.artist { entries["artist"] = .string(artist) }
        if let album = metadata.album { entries["album"] = .string(album) }
        if let artwork = metadata.artworkURL { entries["artworkUrl"] = .string(artwork.absoluteString) }
        if let duration = metadata.duration { entries["duration"] = .double(duration) }
        entries["live"] = .bool(metadata.isLive)
        return .properties(entries)
    }

    /// Unknown keys are ignored; values of the wrong type are refused.
    public static func decode(_ value: DBusValue) throws -> PlaybackMetadata {
        var metadata = PlaybackMetadata()
        for (key, raw) in value.dictionary ?? [:] {
            let value = raw.unwrapped
            func refuse() -> MediaDeviceError { MediaDeviceError(.invalidArgument, "metadata \(key) has the wrong type") }
            switch key {
            case "title": guard let text = value.string else { throw refuse() }; metadata.title = text
            case "artist": guard let text = value.string else { throw refuse() }; metadata.artist = text
            case "album": guard let text = value.string else { throw refuse() }; metadata.album = text
            case "artworkUrl":
                guard let text = value.string, let url = URL(string: text), url.scheme != nil else { throw refuse() }
                metadata.artworkURL = url
            case "duration":
                guard let seconds = value.double, seconds.isFinite, seconds >= 0 else { throw refuse() }
                metadata.duration = seconds
            case "live": guard let live = value.bool else { throw refuse() }; metadata.isLive = live
            default: continue
            }
        }
        return metadata
    }
}

extension SessionMetadataCodec {
    /// `Session1.SetNowPlaying`'s dictionary: the metadata keys above, `position` (d, seconds)
    /// and `artwork` (ay, JPEG or PNG bytes, at most 1 MiB).
    public static func encode(_ nowPlaying: RealtimeNowPlaying) -> DBusValue {
        var entries = encode(nowPlaying.metadata).dictionary ?? [:]
        if let position = nowPlaying.position { entries["position"] = .double(position) }
        if let artwork = nowPlaying.artwork { entries["artwork"] = .bytes(artwork.bytes) }
        return .properties(entries)
    }

    public static func decodeNowPlaying(_ value: DBusValue) throws -> RealtimeNowPlaying {
        var nowPlaying = RealtimeNowPlaying(metadata: try decode(value))
        let entries = value.dictionary ?? [:]
        if let raw = entries["position"] {
            guard let seconds = raw.unwrapped.double, seconds.isFinite, seconds >= 0 else {
                throw MediaDeviceError(.invalidArgument, "now playing position must be seconds")
            }
            nowPlaying.position = seconds
        }
        if let raw = entries["artwork"] {
            guard let bytes = raw.unwrapped.bytes else { throw MediaDeviceError(.invalidArgument, "now playing artwork must be bytes") }
            guard let artwork = RealtimeNowPlaying.Artwork(bytes: bytes) else {
                throw MediaDeviceError(
                    .invalidArgument, "now playing artwork must be a JPEG or PNG image of at most \(RealtimeNowPlaying.Artwork.maximumBytes) bytes")
            }
            nowPlaying.artwork = artwork
        }
        return nowPlaying
    }
}
