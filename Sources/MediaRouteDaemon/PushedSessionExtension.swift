#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
import NowPlaying

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
