/// The playback of one session as an app controls it: the seeds' `AVInterfaceControllable`.
///
/// An app reads the state and commands the device by setting the settable properties;
/// a setter updates the state at once and the device's next report corrects it if it
/// disagrees. The extension side (`PlaybackControl` in MediaDevice) and the daemon's
/// client (`BusPlaybackControl` in MediaRouteClient) both provide it, so an app works the
/// same in-process and over the bus.
public protocol InterfaceControllable: AnyObject, Sendable {
    /// The current state; its position is as of its timestamp (see ``currentPlaybackPosition``).
    var snapshot: PlaybackSnapshot { get }
    /// Observes every change, starting with the current state.
    func changes() -> AsyncStream<PlaybackSnapshot>

    /// Whether the device is playing. Setting it sends play or pause.
    var isPlaying: Bool { get set }
    /// The position in seconds now. Setting it seeks; seeking never starts playback.
    var currentPlaybackPosition: Double { get set }
    /// Speed while playing. Setting 0 pauses; a positive value plays at that speed.
    var playbackSpeed: Double { get set }
    /// Volume 0.0–1.0 of the playback (values outside are clamped).
    var volume: Float { get set }
    var isMuted: Bool { get set }
    /// The selected audio track; only one of the snapshot's `audibleOptions` (or nil) is accepted.
    var currentAudibleOption: MediaSelectionOption? { get set }
    /// The selected subtitle; only one of the snapshot's `legibleOptions` (or nil: off) is accepted.
    var currentLegibleOption: MediaSelectionOption? { get set }

    /// Starts or resumes playback.
    func play()
    /// Pauses playback, freezing the position where it is now.
    func pause()
    /// Moves to `position` seconds (clamped to the time range); does not start playback.
    func seek(to position: Double)
    /// Stops playback and ends the session.
    func stop()
}

extension InterfaceControllable {
    public var playbackState: PlaybackSnapshot.State { snapshot.state }
    public var timeRange: ClosedRange<Double>? { snapshot.timeRange }
    public var metadata: PlaybackMetadata { snapshot.metadata }
    public var audibleOptions: [MediaSelectionOption] { snapshot.audibleOptions }
    public var legibleOptions: [MediaSelectionOption] { snapshot.legibleOptions }
}
