#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// One remote session as Now Playing surfaces (MPRIS, the daemon's D-Bus API)
/// show it: values only, no handlers.
public struct NowPlayingInfo: Sendable {
    public var sessionID: String
    /// The push topic of the extension that produced the session.
    public var topic: String
    public var content: (any MediaContentRepresentable)?
    public var playback: MediaPlaybackSnapshot?
    public var commands: [MediaCommandDescriptor]
    public var devices: [RemoteMediaDeviceDescriptor]
    public var languageOptions: MediaLanguageOptions

    public init(
        sessionID: String, topic: String, content: (any MediaContentRepresentable)? = nil, playback: MediaPlaybackSnapshot? = nil,
        commands: [MediaCommandDescriptor] = [], devices: [RemoteMediaDeviceDescriptor] = [],
        languageOptions: MediaLanguageOptions = MediaLanguageOptions()
    ) {
        self.sessionID = sessionID
        self.topic = topic
        self.content = content
        self.playback = playback
        self.commands = commands
        self.devices = devices
        self.languageOptions = languageOptions
    }

    /// Whether a command of `kind` is registered and enabled.
    public func isEnabled(_ kind: MediaCommand.Kind) -> Bool {
        commands.contains { $0.kind == kind && $0.isEnabled }
    }

    public func command(_ kind: MediaCommand.Kind) -> MediaCommandDescriptor? {
        commands.first { $0.kind == kind }
    }

    /// Whether the position now differs from where the previous snapshot's
    /// extrapolation puts it by more than `tolerance` seconds (a seek or a jump).
    public func positionJumped(from previous: NowPlayingInfo, at date: Date, tolerance: Double = 0.5) -> Bool {
        guard let now = playback else { return false }
        guard let before = previous.playback else { return now.elapsedTime > tolerance }
        if previous.content?.id != content?.id { return false }
        return abs(now.elapsedTime(at: date) - before.elapsedTime(at: date)) > tolerance
    }
}
