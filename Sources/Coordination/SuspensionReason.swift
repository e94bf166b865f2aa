import MediaClock
import MediaDevice
import RoutingModel

/// Why a participant stepped out of group playback for a while.
public struct SuspensionReason: Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let stallRecovery = SuspensionReason("stallRecovery")
    public static let audioSessionInterrupted = SuspensionReason("audioSessionInterrupted")
    public static let playingInterstitial = SuspensionReason("playingInterstitial")
    public static let coordinatedPlaybackNotPossible = SuspensionReason("coordinatedPlaybackNotPossible")
    public static let userActionRequired = SuspensionReason("userActionRequired")
    public static let userIsChangingCurrentTime = SuspensionReason("userIsChangingCurrentTime")
}
