#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Playback state as a simulated device reports it.
public struct LoopbackPlaybackStatus: Codable, Sendable, Equatable {
    public enum State: String, Codable, Sendable { case stopped, paused, playing }
    public var url: String?
    public var state: State
    /// Position in seconds at the moment the status was sent.
    public var position: Double
    public var rate: Double
    public var duration: Double

    public init(url: String?, state: State, position: Double, rate: Double, duration: Double) {
        self.url = url
        self.state = state
        self.position = position
        self.rate = rate
        self.duration = duration
    }
}
