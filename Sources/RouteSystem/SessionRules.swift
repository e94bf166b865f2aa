#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import RoutingModel

/// The rules of a route's URL session and its data channels, on values: what may start,
/// what the session's metadata says when the app and the device both describe it, and which
/// channel has something at the other end.
enum SessionRules {
    /// The URL schemes a device may be pointed at.
    static let schemes: Set<String> = ["http", "https", "rtsp", "file"]

    /// Whether a URL session may start on `route` now.
    /// - Throws: ``MediaDeviceError`` `unsupported` (the device plays no URLs), `sessionFailed`
    ///   (one plays or is starting), `invalidArgument` (a scheme devices do not fetch).
    static func checkStart(of url: URL, on route: ActiveRoute, busy: Bool) throws(MediaDeviceError) {
        guard route.device.capabilities.contains(.urlPlayback) else {
            throw MediaDeviceError(.unsupported, "\(route.device.displayName) does not play URLs")
        }
        guard !busy else { throw MediaDeviceError(.sessionFailed, "\(route.device.displayName) is already playing") }
        guard let scheme = url.scheme?.lowercased(), schemes.contains(scheme) else {
            throw MediaDeviceError(.invalidArgument, "unsupported URL \(url)")
        }
    }

    /// What the session plays: what the app said beats a device's guess from the file name
    /// (title, artist, album, artwork); a duration or liveness the device measured beats the app's.
    static func merged(reported: PlaybackMetadata, described: PlaybackMetadata) -> PlaybackMetadata {
        var merged = reported
        merged.title = described.title ?? merged.title
        merged.artist = described.artist ?? merged.artist
        merged.album = described.album ?? merged.album
        merged.artworkURL = described.artworkURL ?? merged.artworkURL
        merged.duration = merged.duration ?? described.duration
        merged.isLive = merged.isLive || described.isLive
        merged.contentURL = merged.contentURL ?? described.contentURL
        return merged
    }

    /// Whether the route data channel reaches something: its extension must take route data.
    /// - Throws: ``MediaDeviceError`` `unsupported` when nothing would receive it.
    static func checkRouteData(receivedByExtension: Bool, protocolName: String, on route: ActiveRoute) throws(MediaDeviceError) {
        guard receivedByExtension else {
            throw MediaDeviceError(.unsupported, "\(protocolName) takes no data on the route channel of \(route.device.displayName)")
        }
    }

    /// The application a session data send goes to: the one the device runs for the session.
    /// - Throws: ``MediaDeviceError`` `sessionFailed` when no application session runs.
    static func sessionDataTarget(playing: Bool, application: String?, on route: ActiveRoute) throws(MediaDeviceError) -> String {
        guard playing, let application else {
            throw MediaDeviceError(.sessionFailed, "no application session runs on \(route.device.displayName)")
        }
        return application
    }
}
