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

/// A remote command for a pushed session, to be carried out by whoever pushed it
/// (the daemon emits it as `org.mediaroute.Push1.CommandRequested`).
public struct ForwardedCommand: Sendable, Equatable {
    public var sessionID: String
    /// `play`, `pause`, `stop`, `nextTrack`, `previousTrack`, `seekToPosition`, `skipForward`, `skipBackward`, `setVolume`.
    public var command: String
    public var value: Double?
    public var deviceID: String?
}

/// Turns pushed attributes into sessions whose commands are forwarded.
struct PushedSessionExtension: RemoteMediaSessionExtension {
    static let topic = "org.mediaroute.push"
    let forward: @Sendable (ForwardedCommand) -> Void

    var configuration: RemoteMediaSessionExtensionConfiguration<Self> {
        RemoteMediaSessionExtensionConfiguration(extension: self, topic: Self.topic)
    }

    func session(_ attributes: PushedSessionAttributes) async throws -> PushedSession {
        PushedSession(attributes: attributes, forward: forward)
    }
}

actor PushedSession: RemoteMediaSessionRepresentable {
    nonisolated let id: String
    private var attributes: PushedSessionAttributes
    private let forward: @Sendable (ForwardedCommand) -> Void

    init(attributes: PushedSessionAttributes, forward: @escaping @Sendable (ForwardedCommand) -> Void) {
        self.id = attributes.id
        self.attributes = attributes
        self.forward = forward
    }

    func update(_ attributes: PushedSessionAttributes) {
        self.attributes = attributes
    }

    var content: (any MediaContentRepresentable)? {
        guard let track = attributes.currentTrack else { return nil }
        var content = MusicContent(
            id: track.id, songTitle: track.title, artistName: track.artist, albumName: track.album,
            duration: track.duration.map { $0 > 0 ? .finite($0) : .live },
            artwork: track.artworkURL.flatMap(URL.init(string:)).map { Artwork(id: track.id, url: $0) })
        content.isExplicit = track.isExplicit ?? false
        return content
    }

    var playbackSnapshot: MediaPlaybackSnapshot? {
        MediaPlaybackSnapshot(
            state: attributes.isPlaying == true ? .playing(rate: attributes.playbackRate ?? 1) : .paused,
            elapsedTime: attributes.elapsedTime ?? 0, timestamp: attributes.timestamp ?? Date())
    }

    var commands: [MediaCommand] {
        let id = self.id
        let forward = self.forward
        let index = attributes.currentTrackIndex ?? 0
        let count = attributes.queueCount ?? 1
        let seekable = (attributes.currentTrack?.duration ?? 0) > 0
        @Sendable func send(_ command: String, _ value: Double? = nil) { forward(ForwardedCommand(sessionID: id, command: command, value: value)) }
        return [
            .play { send("play") },
            .pause { send("pause") },
            .stop { send("stop") },
            .next { send("nextTrack") }.enabled(index < count - 1),
            .previous { send("previousTrack") }.enabled(index > 0),
            .seekToPosition { send("seekToPosition", $0) }.enabled(seekable),
            .skipForward { send("skipForward", $0) }.enabled(seekable),
            .skipBackward { send("skipBackward", $0) }.enabled(seekable),
        ]
    }

    var devices: [RemoteMediaDevice] {
        let id = self.id
        let forward = self.forward
        return (attributes.devices ?? []).map { device in
            RemoteMediaDevice(
                id: device.id, name: device.name, type: RemoteMediaDevice.DeviceType(rawValue: device.type ?? "") ?? .unknown,
                capabilities: device.volume.map { level in
                    [.absoluteVolume(level) { newLevel in
                        forward(ForwardedCommand(sessionID: id, command: "setVolume", value: Double(newLevel), deviceID: device.id))
                    }]
                } ?? [])
        }
    }
}
