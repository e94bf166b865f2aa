/// The playback state of a remote session, as the seeds' `AVInterfaceControllable` models it.
public struct PlaybackSnapshot: Sendable, Equatable {
    /// Where playback is.
    public enum State: String, Sendable, Equatable, Codable {
        case idle, loading, playing, paused, buffering, ended, failed
    }

    public var state: State
    /// Position in seconds at ``timestamp``.
    public var position: Double
    /// Host time at which ``position`` was true.
    public var timestamp: Duration
    /// Speed while playing (1 = normal); 0 when not playing.
    public var playbackSpeed: Double
    /// The seekable range in seconds, when known.
    public var timeRange: ClosedRange<Double>?
    public var metadata: PlaybackMetadata
    public var volume: Float
    public var isMuted: Bool
    public var audibleOptions: [MediaSelectionOption]
    public var currentAudibleOption: MediaSelectionOption?
    public var legibleOptions: [MediaSelectionOption]
    public var currentLegibleOption: MediaSelectionOption?

    public init(
        state: State = .idle, position: Double = 0, timestamp: Duration = .zero, playbackSpeed: Double = 0,
        timeRange: ClosedRange<Double>? = nil, metadata: PlaybackMetadata = PlaybackMetadata(), volume: Float = 1,
        isMuted: Bool = false, audibleOptions: [MediaSelectionOption] = [],
        currentAudibleOption: MediaSelectionOption? = nil, legibleOptions: [MediaSelectionOption] = [],
        currentLegibleOption: MediaSelectionOption? = nil
    ) {
        self.state = state
        self.position = position
        self.timestamp = timestamp
        self.playbackSpeed = playbackSpeed
        self.timeRange = timeRange
        self.metadata = metadata
        self.volume = volume
        self.isMuted = isMuted
        self.audibleOptions = audibleOptions
        self.currentAudibleOption = currentAudibleOption
        self.legibleOptions = legibleOptions
        self.currentLegibleOption = currentLegibleOption
    }

    public var isPlaying: Bool { state == .playing }

    /// The position extrapolated to host time `now` from the snapshot and its speed,
    /// clamped to the time range when there is one.
    public func position(at now: Duration) -> Double {
        guard state == .playing else { return position }
        let extrapolated = position + (now - timestamp).secondsValue * playbackSpeed
        guard let range = timeRange else { return max(extrapolated, 0) }
        return min(max(extrapolated, range.lowerBound), range.upperBound)
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    var secondsValue: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
