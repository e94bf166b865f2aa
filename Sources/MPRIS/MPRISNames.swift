#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
public import DBus
import NowPlaying

/// MPRIS names.
public enum MPRISNames {
    public static let objectPath: DBusObjectPath = "/org/mpris/MediaPlayer2"
    public static let root = "org.mpris.MediaPlayer2"
    public static let player = "org.mpris.MediaPlayer2.Player"
    /// What MPRIS lacks (per-device volume, language options, skip intervals), documented in Docs/dbus-api.md.
    public static let extras = "org.mediaroute.NowPlaying1"
    /// The well-known name of the primary-session player.
    public static let defaultBusName = "org.mpris.MediaPlayer2.mediaroute"
    /// The track id MPRIS reserves for "no track".
    public static let noTrack: DBusObjectPath = "/org/mpris/MediaPlayer2/TrackList/NoTrack"
}
