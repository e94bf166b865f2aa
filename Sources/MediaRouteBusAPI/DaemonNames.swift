#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
public import DBus
public import RoutingModel

/// The daemon's names on the bus, shared by `mediarouted` and its clients. Documented in Docs/dbus-api.md.
public enum DaemonNames {
    /// The well-known bus name the daemon owns.
    public static let busName = "org.mediaroute"
    /// The root object: `org.mediaroute.Manager1` and the ObjectManager of everything below.
    public static let root: DBusObjectPath = "/org/mediaroute"
    public static let manager = "org.mediaroute.Manager1"
    public static let device = "org.mediaroute.Device1"
    public static let session = "org.mediaroute.Session1"
    /// Implemented by apps that answer pairing prompts.
    public static let pairingAgent = "org.mediaroute.PairingAgent1"
    public static let errorPrefix = "org.mediaroute.Error."

    public static func devicePath(_ id: String) -> DBusObjectPath { root.appending("device").appending(id) }

    public static func sessionPath(_ session: MediaOutputSession) -> DBusObjectPath {
        root.appending("session").appending(session.id.uuidString)
    }
}

extension MediaDeviceError {
    /// The D-Bus error carrying this error: `org.mediaroute.Error.<Code>`.
    public var dbusError: DBusError {
        let code = code.rawValue.prefix(1).uppercased() + code.rawValue.dropFirst()
        return DBusError(name: DaemonNames.errorPrefix + code, message: message)
    }

    /// The device error a D-Bus error from the daemon stands for.
    public init(dbusError: DBusError) {
        if dbusError.name.hasPrefix(DaemonNames.errorPrefix) {
            let raw = String(dbusError.name.dropFirst(DaemonNames.errorPrefix.count))
            let name = raw.prefix(1).lowercased() + raw.dropFirst()
            if let code = MediaDeviceError.Code(rawValue: name) {
                self.init(code, dbusError.message)
                return
            }
        }
        if dbusError.name == DBusError.timeoutName || dbusError.name == DBusError.noReplyName {
            self.init(.timedOut, dbusError.description)
        } else {
            self.init(.connectionFailed, dbusError.description)
        }
    }
}

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

/// Runs `body`, turning a `MediaDeviceError` into its D-Bus error.
public func mapErrors<T>(isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as MediaDeviceError {
        throw error.dbusError
    }
}
