#if canImport(FoundationEssentials)
internal import FoundationEssentials
#else
internal import Foundation
#endif

/// One media session's status (`MEDIA_STATUS` carries a list).
public struct CastMediaStatus: Sendable, Equatable, Decodable {
    public var mediaSessionId: Int
    /// `IDLE`, `LOADING`, `BUFFERING`, `PLAYING`, `PAUSED`.
    public var playerState: String
    public var currentTime: Double?
    public var playbackRate: Double?
    /// With `IDLE`: `FINISHED`, `CANCELLED`, `INTERRUPTED`, `ERROR`.
    public var idleReason: String?
    public var media: CastMediaInformation?
    public var volume: CastVolume?

    public init(
        mediaSessionId: Int, playerState: String, currentTime: Double? = nil, playbackRate: Double? = nil, idleReason: String? = nil,
        media: CastMediaInformation? = nil, volume: CastVolume? = nil
    ) {
        self.mediaSessionId = mediaSessionId
        self.playerState = playerState
        self.currentTime = currentTime
        self.playbackRate = playbackRate
        self.idleReason = idleReason
        self.media = media
        self.volume = volume
    }
}
