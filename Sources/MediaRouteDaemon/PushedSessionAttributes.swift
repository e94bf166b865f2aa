#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import NowPlaying

/// Attributes of sessions a server starts with push events to the daemon: the
/// seeds' example shape, every field but `id` optional.
public struct PushedSessionAttributes: RemoteMediaSessionAttributes, Equatable {
    public struct Track: Codable, Sendable, Equatable {
        public var id: String
        public var title: String?
        public var artist: String?
        public var album: String?
        /// Seconds; absent or 0 for live content.
        public var duration: Double?
        public var artworkURL: String?
        public var isExplicit: Bool?
    }

    public struct Device: Codable, Sendable, Equatable {
        public var id: String
        public var name: String
        public var type: String?
        /// 0.0–1.0 when the device takes absolute volume.
        public var volume: Float?
    }

    public var id: String
    public var isPlaying: Bool?
    public var elapsedTime: Double?
    public var timestamp: Date?
    public var playbackRate: Double?
    public var currentTrack: Track?
    public var devices: [Device]?
    public var queueCount: Int?
    public var currentTrackIndex: Int?
}
