#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NowPlaying

/// The seeds' example attributes.
public struct SpeakerAttributes: RemoteMediaSessionAttributes, Equatable {
    public struct TrackInfo: Codable, Sendable, Equatable {
        public var id: String
        public var title: String
        public var artist: String
        public var album: String
        public var duration: Double
        public var artworkURL: String?
    }

    public struct DeviceInfo: Codable, Sendable, Equatable {
        public var id: String
        public var name: String
        public var type: String
        public var volume: Float
    }

    public var id: String
    public var isPlaying: Bool
    public var elapsedTime: Double
    public var timestamp: Date
    public var currentTrack: TrackInfo?
    public var devices: [DeviceInfo]
    public var queueCount: Int
    public var currentTrackIndex: Int

    public static func sample(id: String = "S1", title: String = "Song Title", index: Int = 0, playing: Bool = true, elapsed: Double = 0) -> Self {
        SpeakerAttributes(
            id: id, isPlaying: playing, elapsedTime: elapsed, timestamp: Date(),
            currentTrack: TrackInfo(id: "track-\(index + 1)", title: title, artist: "Name of Artist", album: "Title of the Album", duration: 237),
            devices: [DeviceInfo(id: "living-room-speaker", name: "Living Room Speaker", type: "speaker", volume: 0.65)],
            queueCount: 5, currentTrackIndex: index)
    }
}

/// What the fake device received.
public enum DeviceCall: Equatable, Sendable {
    case command(String)
    case seek(Double)
    case skip(Double)
    case rate(Double)
    case language(String, Bool)
    case volume(Float)
    case step(Int)
}

/// The seeds' example session: content and commands from the attributes; commands land in `calls`.
public actor SpeakerSession: RemoteMediaSessionRepresentable {
    public nonisolated let id: String
    public private(set) var attributes: SpeakerAttributes
    public let calls: Locked<[DeviceCall]>
    public var failNext = false
    public var subtitles: MediaLanguageOption?
    public let english = MediaLanguageOption(kind: .legible, identifier: "en", displayName: "English", languageTag: "en")
    public let french = MediaLanguageOption(kind: .audible, identifier: "fr", displayName: "Français", languageTag: "fr")
    private let changeStream: AsyncStream<Void>
    private let changeContinuation: AsyncStream<Void>.Continuation
    private let updateDelay: Duration

    public init(attributes: SpeakerAttributes, calls: Locked<[DeviceCall]>, updateDelay: Duration) {
        self.id = attributes.id
        self.attributes = attributes
        self.calls = calls
        self.updateDelay = updateDelay
        (changeStream, changeContinuation) = AsyncStream.makeStream()
    }

    public func update(_ attributes: SpeakerAttributes) async {
        // Suspends, like an extension that talks to its device, to prove ordering.
        if updateDelay > .zero { try? await Task.sleep(for: updateDelay) }
        self.attributes = attributes
    }

    public nonisolated func changes() -> AsyncStream<Void> { changeStream }

    /// A change from the device itself (no update).
    public func deviceChangedTrack(title: String) {
        attributes.currentTrack?.title = title
        changeContinuation.yield()
    }

    private func record(_ call: DeviceCall) throws {
        if failNext {
            failNext = false
            throw CancellationError()
        }
        calls.withLock { $0.append(call) }
    }

    public func setFailNext() { failNext = true }

    public var content: (any MediaContentRepresentable)? {
        guard let track = attributes.currentTrack else { return nil }
        var content = MusicContent(
            id: track.id, songTitle: track.title, artistName: track.artist, albumName: track.album,
            duration: .finite(track.duration),
            artwork: track.artworkURL.flatMap(URL.init(string:)).map { Artwork(id: track.id, url: $0) })
        content.isExplicit = track.id == "explicit"
        return content
    }

    public var playbackSnapshot: MediaPlaybackSnapshot? {
        MediaPlaybackSnapshot(state: attributes.isPlaying ? .playing() : .paused, elapsedTime: attributes.elapsedTime, timestamp: attributes.timestamp)
    }

    public var languageOptions: MediaLanguageOptions {
        MediaLanguageOptions(
            groups: [
                MediaLanguageOptionGroup(options: [french], defaultOption: french, allowsEmptySelection: false),
                MediaLanguageOptionGroup(options: [english], allowsEmptySelection: true),
            ],
            current: [french] + (subtitles.map { [$0] } ?? []))
    }

    public func setSubtitles(_ option: MediaLanguageOption?) { subtitles = option }

    public var commands: [MediaCommand] {
        [
            .play { try await self.record(.command("play")) },
            .pause { try await self.record(.command("pause")) },
            .stop { try await self.record(.command("stop")) },
            .next { try await self.record(.command("next")) }.enabled(attributes.currentTrackIndex < attributes.queueCount - 1),
            .previous { try await self.record(.command("previous")) }.enabled(attributes.currentTrackIndex > 0),
            .seekToPosition { time in try await self.record(.seek(time)) },
            .skipForward(preferredIntervals: [15, 30]) { interval in try await self.record(.skip(interval)) },
            .skipBackward(preferredIntervals: [15]) { interval -> MediaCommandStatus in
                try await self.record(.skip(-interval))
                return .success
            },
            .changePlaybackRate(supportedPlaybackRates: [1, 2]) { rate in try await self.record(.rate(rate)) },
            .enableLanguageOption { option in
                try await self.record(.language(option.identifier, true))
                if option.kind == .legible { await self.setSubtitles(option) }
            },
            .disableLanguageOption { option in
                try await self.record(.language(option.identifier, false))
                await self.setSubtitles(nil)
            },
        ]
    }

    public var devices: [RemoteMediaDevice] {
        attributes.devices.map { device in
            RemoteMediaDevice(id: device.id, name: device.name, type: .speaker, capabilities: [
                .absoluteVolume(device.volume) { level in try await self.record(.volume(level)) }
            ])
        } + [
            RemoteMediaDevice(id: "soundbar", name: "Soundbar", type: .speaker, capabilities: [
                .relativeVolume(onIncrement: { try await self.record(.step(1)) }, onDecrement: { try await self.record(.step(-1)) })
            ])
        ]
    }
}

/// The seeds' example extension.
public struct SpeakerExtension: RemoteMediaSessionExtension {
    public init(updateDelay: Duration = .zero, topic: String? = nil) {
        self.updateDelay = updateDelay
        self.topic = topic
    }

    public let calls = Locked<[DeviceCall]>([])
    public let sessions = Locked<[String: SpeakerSession]>([:])
    public var updateDelay: Duration = .zero
    public var topic: String? = nil

    public var configuration: RemoteMediaSessionExtensionConfiguration<Self> {
        RemoteMediaSessionExtensionConfiguration(extension: self, topic: topic)
    }

    public func session(_ attributes: SpeakerAttributes) async throws -> SpeakerSession {
        if attributes.id == "refuse" { throw CancellationError() }
        let session = SpeakerSession(attributes: attributes, calls: calls, updateDelay: updateDelay)
        sessions.withLock { $0[attributes.id] = session }
        return session
    }
}

/// The three example payloads of the seeds' article, verbatim in shape.
public enum SeedPayloads {
    public static let start = """
        {"aps": {"event": "start", "timestamp": 1773907200, "attributes": {
          "id": "A1B2C3D4-E5F6-7890-ABCD-EF1234567890",
          "devices": [{"id": "living-room-speaker", "name": "Living Room Speaker", "type": "speaker", "volume": 0.65}],
          "isPlaying": true, "currentTrackIndex": 0, "queueCount": 5, "elapsedTime": 0,
          "timestamp": "2026-03-16T12:00:00Z",
          "currentTrack": {"id": "track-1", "title": "Song Title", "artist": "Name of Artist",
            "album": "Title of the Album", "duration": 237.0, "artworkURL": "https://example.com/artwork/track-1"}}}}
        """
    public static let update = """
        {"aps": {"event": "update", "timestamp": 1773907444, "attributes": {
          "id": "A1B2C3D4-E5F6-7890-ABCD-EF1234567890",
          "devices": [{"id": "living-room-speaker", "name": "Living Room Speaker", "type": "speaker", "volume": 0.65}],
          "isPlaying": true, "currentTrackIndex": 1, "queueCount": 5, "elapsedTime": 0,
          "timestamp": "2026-06-08T12:00:00Z",
          "currentTrack": {"id": "track-2", "title": "Song Title", "artist": "Name of Artist",
            "album": "Title of the Album", "duration": 312.0, "artworkURL": "https://example.com/artwork/track-2"}}}}
        """
    public static let end = """
        {"aps": {"event": "end", "timestamp": 1773907847, "attributes": {"id": "A1B2C3D4-E5F6-7890-ABCD-EF1234567890"}}}
        """
}

extension String {
    public var bytes: [UInt8] { Array(utf8) }
}
