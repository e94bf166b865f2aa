#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import MediaClock
import Synchronization
import EventBroadcast

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
        let extrapolated = position + (now - timestamp).seconds * playbackSpeed
        guard let range = timeRange else { return max(extrapolated, 0) }
        return min(max(extrapolated, range.lowerBound), range.upperBound)
    }
}

/// What is playing.
public struct PlaybackMetadata: Sendable, Equatable, Codable {
    public var title: String?
    public var artist: String?
    public var album: String?
    public var artworkURL: URL?
    /// Duration in seconds; nil when unknown or live.
    public var duration: Double?
    public var isLive: Bool
    public var contentURL: URL?

    public init(
        title: String? = nil, artist: String? = nil, album: String? = nil, artworkURL: URL? = nil,
        duration: Double? = nil, isLive: Bool = false, contentURL: URL? = nil
    ) {
        self.title = title
        self.artist = artist
        self.album = album
        self.artworkURL = artworkURL
        self.duration = duration
        self.isLive = isLive
        self.contentURL = contentURL
    }
}

/// An audio track or subtitle a person can pick.
public struct MediaSelectionOption: Sendable, Hashable, Codable, Identifiable {
    public var id: String
    public var displayName: String
    /// BCP 47 language tag, when the option has a language.
    public var languageTag: String?

    public init(id: String, displayName: String, languageTag: String? = nil) {
        self.id = id
        self.displayName = displayName
        self.languageTag = languageTag
    }
}

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

/// The live, controllable playback of one session: the seeds' `AVInterfaceControllable`.
///
/// An extension creates one per started session and hands it to the system
/// with `started(application:playbackControl:session:)`. From then on:
/// - the extension reports the device's state with ``update(_:)`` and
///   consumes ``commands`` in order, translating each into its protocol;
/// - the system and apps read the properties and observe ``changes()``, and
///   command the device by setting the settable properties (`isPlaying`,
///   `currentPlaybackPosition`, `playbackSpeed`, `volume`, `isMuted`,
///   `currentAudibleOption`, `currentLegibleOption`).
///
/// A setter updates the state at once (optimistically) and queues the
/// command; the device's next report corrects the state if it disagrees.
/// The position is never polled: it is extrapolated from the last report, its
/// timestamp and the speed, on the injected clock.
public final class PlaybackControl: Sendable {
    private let clock: any HostClock
    private let state: Mutex<PlaybackSnapshot>
    private let observers = EventBroadcaster<PlaybackSnapshot>(bufferingPolicy: .bufferingNewest(64))
    private let stopHandler = Mutex<(@Sendable () -> Void)?>(nil)
    private let commandContinuation: AsyncStream<PlaybackCommand>.Continuation

    /// Commands for the extension, in the order they were given. Consume it from one task.
    public let commands: AsyncStream<PlaybackCommand>

    public init(initial: PlaybackSnapshot = PlaybackSnapshot(), clock: any HostClock = SystemHostClock()) {
        self.clock = clock
        var snapshot = initial
        if snapshot.timestamp == .zero { snapshot.timestamp = clock.now() }
        self.state = Mutex(snapshot)
        (commands, commandContinuation) = AsyncStream.makeStream(of: PlaybackCommand.self)
    }

    deinit {
        commandContinuation.finish()
        observers.finish()
    }

    // MARK: Reading

    /// The current state; its position is as of its timestamp (see ``currentPlaybackPosition``).
    public var snapshot: PlaybackSnapshot { state.withLock { $0 } }
    public var playbackState: PlaybackSnapshot.State { snapshot.state }
    public var timeRange: ClosedRange<Double>? { snapshot.timeRange }
    public var metadata: PlaybackMetadata { snapshot.metadata }
    public var audibleOptions: [MediaSelectionOption] { snapshot.audibleOptions }
    public var legibleOptions: [MediaSelectionOption] { snapshot.legibleOptions }

    /// Observes every change, starting with the current state.
    public func changes() -> AsyncStream<PlaybackSnapshot> {
        observers.subscribe(startingWith: [snapshot])
    }

    // MARK: Commanding (settable properties)

    /// Whether the device is playing. Setting it sends play or pause.
    public var isPlaying: Bool {
        get { snapshot.isPlaying }
        set { newValue ? play() : pause() }
    }

    /// The position in seconds now. Setting it seeks; seeking never starts playback.
    public var currentPlaybackPosition: Double {
        get { snapshot.position(at: clock.now()) }
        set { seek(to: newValue) }
    }

    /// Speed while playing. Setting 0 pauses; a positive value plays at that speed.
    public var playbackSpeed: Double {
        get { snapshot.playbackSpeed }
        set {
            guard newValue.isFinite, newValue >= 0 else { return }
            if newValue == 0 { pause(); return }
            command(.setSpeed(newValue)) { snapshot, now in
                snapshot.position = snapshot.position(at: now)
                snapshot.timestamp = now
                if snapshot.state == .playing { snapshot.playbackSpeed = newValue }
            }
        }
    }

    /// Volume 0.0–1.0 of the playback (values outside are clamped).
    public var volume: Float {
        get { snapshot.volume }
        set {
            let level = newValue.isFinite ? min(max(newValue, 0), 1) : 0
            command(.setVolume(level)) { snapshot, _ in snapshot.volume = level }
        }
    }

    public var isMuted: Bool {
        get { snapshot.isMuted }
        set { command(.setMuted(newValue)) { snapshot, _ in snapshot.isMuted = newValue } }
    }

    /// The selected audio track; only one of ``audibleOptions`` (or nil) is accepted.
    public var currentAudibleOption: MediaSelectionOption? {
        get { snapshot.currentAudibleOption }
        set {
            guard newValue == nil || snapshot.audibleOptions.contains(newValue!) else { return }
            command(.selectAudible(newValue)) { snapshot, _ in snapshot.currentAudibleOption = newValue }
        }
    }

    /// The selected subtitle; only one of ``legibleOptions`` (or nil: off) is accepted.
    public var currentLegibleOption: MediaSelectionOption? {
        get { snapshot.currentLegibleOption }
        set {
            guard newValue == nil || snapshot.legibleOptions.contains(newValue!) else { return }
            command(.selectLegible(newValue)) { snapshot, _ in snapshot.currentLegibleOption = newValue }
        }
    }

    /// Starts or resumes playback.
    public func play() {
        command(.play) { snapshot, now in
            snapshot.position = snapshot.position(at: now)
            snapshot.timestamp = now
            snapshot.state = .playing
            if snapshot.playbackSpeed == 0 { snapshot.playbackSpeed = 1 }
        }
    }

    /// Pauses playback, freezing the position where it is now.
    public func pause() {
        command(.pause) { snapshot, now in
            snapshot.position = snapshot.position(at: now)
            snapshot.timestamp = now
            if snapshot.state == .playing { snapshot.state = .paused }
            snapshot.playbackSpeed = 0
        }
    }

    /// Moves to `position` seconds (clamped to the time range); does not start playback.
    public func seek(to position: Double) {
        guard position.isFinite else { return }
        command(.seek(to: position)) { snapshot, now in
            var target = max(position, 0)
            if let range = snapshot.timeRange { target = min(max(target, range.lowerBound), range.upperBound) }
            snapshot.position = target
            snapshot.timestamp = now
        }
    }

    /// Stops playback; the extension ends the session.
    /// Called once the stop command is queued: the routing system ends the session then.
    public func setStopHandler(_ handler: @escaping @Sendable () -> Void) {
        stopHandler.withLock { $0 = handler }
    }

    public func stop() {
        defer {
            let handler = stopHandler.withLock { handler in
                defer { handler = nil }
                return handler
            }
            handler?()
        }
        command(.stop) { snapshot, now in
            snapshot.position = snapshot.position(at: now)
            snapshot.timestamp = now
            snapshot.state = .idle
            snapshot.playbackSpeed = 0
        }
    }

    // MARK: Extension side

    /// Reports the device's state. The timestamp defaults to now when the
    /// position changes without one.
    public func update(_ body: (inout PlaybackSnapshot) -> Void) {
        let now = clock.now()
        let updated = state.withLock { snapshot -> PlaybackSnapshot in
            let before = snapshot
            body(&snapshot)
            if snapshot.position != before.position && snapshot.timestamp == before.timestamp {
                snapshot.timestamp = now
            }
            if snapshot.state != .playing { snapshot.playbackSpeed = 0 }
            return snapshot
        }
        publish(updated)
    }

    /// Ends the command stream and observation (the session is over).
    public func finish() {
        commandContinuation.finish()
        observers.finish()
    }

    private func command(_ command: PlaybackCommand, apply: (inout PlaybackSnapshot, Duration) -> Void) {
        let now = clock.now()
        let updated = state.withLock { snapshot -> PlaybackSnapshot in
            apply(&snapshot, now)
            return snapshot
        }
        commandContinuation.yield(command)
        publish(updated)
    }

    private func publish(_ snapshot: PlaybackSnapshot) {
        observers.yield(snapshot)
    }
}
