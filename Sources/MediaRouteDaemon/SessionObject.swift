#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DBus
import MediaRouteBusAPI
import MediaDevice
import RouteSystem
import RoutingModel

/// `/org/mediaroute/session/<uuid>`: `org.mediaroute.Session1`, one per active route:
/// start and stop a URL session on it, command and observe playback, and use its data channels.
struct SessionObject {
    let daemon: RoutingDaemon
    let route: ActiveRoute

    var object: DBusObject {
        let daemon = self.daemon
        let session = route.session
        var interface = DBusInterface(
            Session1.interface,
            methods: Session1.Call.exportedMethods { call, message in
                try await Self.handle(call, sender: message.sender, session: session, daemon: daemon)
            },
            properties: Session1.Properties.signatures,
            signals: Session1.Signal.descriptions,
            snapshot: { await daemon.sessionProperties(session)?.values ?? [:] })
        // What plays is the session owner's business (PrivateReaders): not for every local user.
        interface.privateProperties = Session1.Properties.privateNames
        return DBusObject(interfaces: [interface])
    }

    private static func handle(_ call: Session1.Call, sender: String, session: MediaOutputSession, daemon: RoutingDaemon) async throws -> [DBusValue] {
        let system = daemon.system
        /// A command of the URL session playing on the route.
        func playback(_ body: (any InterfaceControllable) -> Void) async throws {
            guard let control = await system.playbackControl(for: session) else {
                throw MediaDeviceError(.sessionFailed, "no URL session is playing").dbusError
            }
            body(control)
        }
        /// A command of the URL session, or, on a route playing real-time audio, of that audio.
        func command(_ body: (any InterfaceControllable) -> Void, realtime: () async throws -> Void) async throws {
            if await system.playbackControl(for: session) == nil, await system.isAudioPaused(on: session) != nil {
                try await mapErrors { try await realtime() }
            } else {
                try await playback(body)
            }
        }
        switch call {
        case .start(let url, let mode, let metadata):
            try await daemon.startSession(
                session, url: url, application: mode == .application ? sender : nil, metadata: metadata ?? PlaybackMetadata())
        case .startFile(let descriptor, let name, let mode, let metadata):
            try await daemon.startSession(
                session, handing: descriptor, name: name, application: mode == .application ? sender : nil, metadata: metadata)
        case .selectAudible(let id):
            try await playback { control in control.currentAudibleOption = control.audibleOptions.first { $0.id == id } }
        case .selectLegible(let id):
            try await playback { control in control.currentLegibleOption = control.legibleOptions.first { $0.id == id } }
        case .stop:
            await system.stopSession(on: session)
        case .play:
            try await command({ $0.play() }, realtime: { try await system.resumeAudio(on: session) })
        case .pause:
            try await command({ $0.pause() }, realtime: { try await system.pauseAudio(on: session) })
        case .seek(let position):
            // Real-time audio has no position of ours: a seek drops what the device holds.
            try await command({ $0.seek(to: position) }, realtime: { try await system.flushAudio(on: session) })
        case .setNowPlaying(let nowPlaying):
            try await mapErrors { try await system.setRealtimeNowPlaying(nowPlaying, on: session) }
        case .setRate(let rate):
            try await playback { $0.playbackSpeed = rate }
        case .send(let bytes):
            try await mapErrors { try await system.sendSessionData(Data(bytes), on: session) }
        case .sendToExtension(let bytes):
            try await mapErrors { try await system.sendRouteData(Data(bytes), fromApplication: sender, on: session) }
        case .acquireAudio(let format):
            return try await daemon.acquireAudio(session, format: format, sender: sender)
        case .releaseAudio:
            await daemon.releaseAudio(session)
        case .acquireVideo(let format):
            return try await daemon.acquireVideo(session, format: format, sender: sender)
        case .releaseVideo:
            await daemon.releaseVideo(session)
        }
        return []
    }
}
