#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif

/// What changed in the center.
public enum NowPlayingEvent: Sendable {
    case sessionStarted(NowPlayingInfo)
    /// The session's representation was read again (after an update, a command or a change).
    case sessionUpdated(NowPlayingInfo, previous: NowPlayingInfo)
    case sessionEnded(sessionID: String)
    /// The session Now Playing surfaces show (nil: none).
    case primaryChanged(sessionID: String?)
    /// A push token was created or rotated; `sessionID` nil for a topic's push-to-start token.
    case pushTokenChanged(topic: String, sessionID: String?, token: PushToken)
}
