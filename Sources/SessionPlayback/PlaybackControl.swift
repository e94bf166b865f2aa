public import RoutingModel
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
public import MediaClock
import Synchronization
import EventBroadcast

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
public final class PlaybackControl: InterfaceControllable {
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
