

/// A command a person sends from a remote UI, with its argument.
public enum MediaCommandRequest: Sendable, Hashable {
    case play
    case pause
    case togglePlayPause
    case stop
    case nextTrack
    case previousTrack
    /// Absolute position in seconds.
    case seekToPosition(Double)
    /// The interval actually asked for (not necessarily a preferred one).
    case skipForward(Double)
    case skipBackward(Double)
    case changePlaybackRate(Double)
    case enableLanguageOption(MediaLanguageOption)
    case disableLanguageOption(MediaLanguageOption)

    public var kind: MediaCommand.Kind {
        switch self {
        case .play: .play
        case .pause: .pause
        case .togglePlayPause: .togglePlayPause
        case .stop: .stop
        case .nextTrack: .nextTrack
        case .previousTrack: .previousTrack
        case .seekToPosition: .seekToPosition
        case .skipForward: .skipForward
        case .skipBackward: .skipBackward
        case .changePlaybackRate: .changePlaybackRate
        case .enableLanguageOption: .enableLanguageOption
        case .disableLanguageOption: .disableLanguageOption
        }
    }
}
