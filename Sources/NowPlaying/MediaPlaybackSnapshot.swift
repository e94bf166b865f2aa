#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Where a remote session's playback is: state, elapsed time at a timestamp, and
/// rate. Observers extrapolate the position from these; nobody polls the device.
public struct MediaPlaybackSnapshot: Sendable, Equatable, Codable {
    /// Playing (at a rate), paused or stopped.
    public enum State: Sendable, Equatable, Codable {
        case playing(rate: Double = 1)
        case paused
        case stopped

        public var isPlaying: Bool {
            if case .playing = self { return true }
            return false
        }

        /// The rate at which the position advances (0 unless playing).
        public var rate: Double {
            if case .playing(let rate) = self { return rate }
            return 0
        }
    }

    public var state: State
    /// Seconds into the content at ``timestamp``.
    public var elapsedTime: Double
    /// Wall-clock time at which ``elapsedTime`` was true.
    public var timestamp: Date

    public init(state: State, elapsedTime: Double, timestamp: Date) {
        self.state = state
        self.elapsedTime = elapsedTime
        self.timestamp = timestamp
    }

    /// The position at `date`, extrapolated by the rate; never negative, and
    /// never past `duration` when one is given.
    public func elapsedTime(at date: Date, duration: Double? = nil) -> Double {
        var position = elapsedTime + date.timeIntervalSince(timestamp) * state.rate
        if let duration, duration > 0 { position = min(position, duration) }
        return max(position, 0)
    }
}
