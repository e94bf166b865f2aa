

/// What a command handler reports (`MPRemoteCommandHandlerStatus` on the seeds' platform).
public enum MediaCommandStatus: String, Sendable, Hashable, Codable {
    case success
    /// The content the command refers to is gone.
    case noSuchContent
    /// Nothing is playing that the command could act on.
    case noActionableNowPlayingItem
    /// The device the command is for is not there.
    case deviceNotFound
    case commandFailed
    /// The command is not registered, or registered but disabled (never reaches the handler).
    case commandDisabled
}
