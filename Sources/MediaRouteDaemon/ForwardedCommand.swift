#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
import NowPlaying

/// A remote command for a pushed session, to be carried out by whoever pushed it
/// (the daemon emits it as `org.mediaroute.Push1.CommandRequested`).
public struct ForwardedCommand: Sendable, Equatable {
    public var sessionID: String
    /// `play`, `pause`, `stop`, `nextTrack`, `previousTrack`, `seekToPosition`, `skipForward`, `skipBackward`, `setVolume`.
    public var command: String
    public var value: Double?
    public var deviceID: String?
}
