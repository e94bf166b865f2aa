#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import MediaClock
import MediaDevice
public import NowPlaying
import RouteSystem
import RoutingModel

/// The attributes of a session the routing system plays: which route it is on.
public struct RoutedSessionAttributes: RemoteMediaSessionAttributes, Equatable {
    /// The `MediaOutputSession` id.
    public var id: String
    public var deviceID: String
    public var deviceName: String
    public var protocolName: String

    public init(id: String, deviceID: String, deviceName: String, protocolName: String) {
        self.id = id
        self.deviceID = deviceID
        self.deviceName = deviceName
        self.protocolName = protocolName
    }
}

/// A URL session on a route, seen through its `PlaybackControl`: content from
/// the metadata, the snapshot from the control's last report, commands that set
/// the control, and the route's device with the volume control it has.
final class RoutedSession: RemoteMediaSessionRepresentable {
    let id: String
    private let route: ActiveRoute
    private let control: any InterfaceControllable
    private let system: RouteSystem
    private let clock: any HostClock

    init(route: ActiveRoute, control: any InterfaceControllable, system: RouteSystem, clock: any HostClock) {
        self.id = route.session.id.uuidString
        self.route = route
        self.control = control
        self.system = system
        self.clock = clock
    }

    func update(_ attributes: RoutedSessionAttributes) async {}

    func changes() -> AsyncStream<Void> {
        let snapshots = control.changes()
        return AsyncStream { continuation in
            let task = Task {
                var first = true
                for await _ in snapshots {
                    if first {
                        first = false  // the current state, already read at start
                        continue
                    }
                    continuation.yield()
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    var content: (any MediaContentRepresentable)? {
        let snapshot = control.snapshot
        let metadata = snapshot.metadata
        let duration: MediaDuration? =
            metadata.isLive ? .live : (metadata.duration ?? snapshot.timeRange?.upperBound).map(MediaDuration.finite)
        let id = metadata.contentURL?.absoluteString ?? metadata.title ?? route.session.id.uuidString
        let artwork = metadata.artworkURL.map { Artwork(id: $0.absoluteString, url: $0) }
        return MusicContent(
            id: id, songTitle: metadata.title, artistName: metadata.artist, albumName: metadata.album,
            type: route.device.deviceType == .tv ? .video : .audio, duration: duration, artwork: artwork)
    }

    var playbackSnapshot: MediaPlaybackSnapshot? {
        let snapshot = control.snapshot
        let state: MediaPlaybackSnapshot.State =
            switch snapshot.state {
            case .playing: .playing(rate: snapshot.playbackSpeed > 0 ? snapshot.playbackSpeed : 1)
            case .paused, .buffering, .loading: .paused
            case .idle, .ended, .failed: .stopped
            }
        // Host time → wall clock: the report was `now - timestamp` ago.
        let age = (clock.now() - snapshot.timestamp).seconds
        return MediaPlaybackSnapshot(state: state, elapsedTime: snapshot.position, timestamp: Date().addingTimeInterval(-age))
    }

    var commands: [MediaCommand] {
        let control = self.control
        let live = control.snapshot.metadata.isLive
        return [
            .play { control.play() },
            .pause { control.pause() },
            .stop { control.stop() },
            .seekToPosition { position in control.seek(to: position) }.enabled(!live),
            .skipForward(preferredIntervals: [15]) { interval in control.seek(to: control.currentPlaybackPosition + interval) }.enabled(!live),
            .skipBackward(preferredIntervals: [15]) { interval in control.seek(to: max(control.currentPlaybackPosition - interval, 0)) }
                .enabled(!live),
            .changePlaybackRate(supportedPlaybackRates: [0.5, 1, 1.5, 2]) { rate in control.playbackSpeed = rate }.enabled(!live),
            .enableLanguageOption { option -> MediaCommandStatus in
                switch option.kind {
                case .audible:
                    guard let match = control.audibleOptions.first(where: { $0.id == option.identifier }) else { return .noSuchContent }
                    control.currentAudibleOption = match
                case .legible:
                    guard let match = control.legibleOptions.first(where: { $0.id == option.identifier }) else { return .noSuchContent }
                    control.currentLegibleOption = match
                }
                return .success
            },
            .disableLanguageOption { option -> MediaCommandStatus in
                guard option.kind == .legible else { return .commandFailed }
                control.currentLegibleOption = nil
                return .success
            },
        ]
    }

    var languageOptions: MediaLanguageOptions {
        let snapshot = control.snapshot
        func convert(_ option: MediaSelectionOption, _ kind: MediaLanguageOption.Kind) -> MediaLanguageOption {
            MediaLanguageOption(kind: kind, identifier: option.id, displayName: option.displayName, languageTag: option.languageTag)
        }
        var groups: [MediaLanguageOptionGroup] = []
        if !snapshot.audibleOptions.isEmpty {
            groups.append(MediaLanguageOptionGroup(options: snapshot.audibleOptions.map { convert($0, .audible) }, allowsEmptySelection: false))
        }
        if !snapshot.legibleOptions.isEmpty {
            groups.append(MediaLanguageOptionGroup(options: snapshot.legibleOptions.map { convert($0, .legible) }, allowsEmptySelection: true))
        }
        let current = [snapshot.currentAudibleOption.map { convert($0, .audible) }, snapshot.currentLegibleOption.map { convert($0, .legible) }]
        return MediaLanguageOptions(groups: groups, current: current.compactMap { $0 })
    }

    var devices: [RemoteMediaDevice] {
        let device = route.device
        let session = route.session
        let system = self.system
        let type: RemoteMediaDevice.DeviceType =
            switch device.deviceType {
            case .tv: .tv
            case .speaker, .speakerGroup: .speaker
            case .headphones: .headphones
            case .setTopBox: .setTopBox
            case .computer: .computer
            case .unknown: .unknown
            }
        var capabilities: [RemoteMediaDevice.Capability] = []
        switch device.volumeControl {
        case .absolute:
            capabilities.append(.absoluteVolume(control.volume) { level in try await system.setVolume(level, on: session) })
        case .relative:
            capabilities.append(.relativeVolume(
                onIncrement: { try await system.changeVolume(by: 1, on: session) },
                onDecrement: { try await system.changeVolume(by: -1, on: session) }))
        case .none:
            break
        }
        return [RemoteMediaDevice(id: device.id, name: device.displayName, type: type, capabilities: capabilities)]
    }
}
