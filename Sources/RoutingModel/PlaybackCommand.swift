/// A command from the system or app to the device, carried to the extension.
public enum PlaybackCommand: Sendable, Equatable {
    case play
    case pause
    case seek(to: Double)
    case setSpeed(Double)
    case setVolume(Float)
    case setMuted(Bool)
    /// Select an audio track (nil: the default).
    case selectAudible(MediaSelectionOption?)
    /// Select a subtitle track (nil: subtitles off).
    case selectLegible(MediaSelectionOption?)
    /// Stop playback and end the session.
    case stop
}
