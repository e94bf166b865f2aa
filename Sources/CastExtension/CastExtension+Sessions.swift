#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
import CastChannel
import HTTPServing
public import MediaDevice
public import RoutingModel

extension CastExtension: MediaDeviceExtension {
    // MARK: Sessions

    public func startSession(_ session: MediaOutputSession, identifier: String?, url: URL) {
        startSession(session, identifier: identifier, url: url, metadata: PlaybackMetadata(contentURL: url))
    }

    /// Launches the app (the Default Media Receiver, or in application mode the app the
    /// session names), joins it, and loads `url` with `metadata` when the app plays media.
    public func startSession(_ session: MediaOutputSession, identifier: String?, url: URL, metadata: PlaybackMetadata) {
        if let identifier, !CastNamespace.isApplicationID(identifier) {
            routingManager.sessionFailed(session, error: MediaDeviceError(.invalidArgument, "\(identifier) is not a Cast application id"))
            return
        }
        do throws(MediaDeviceError) {
            try Self.checkPlayable(url)
        } catch {
            routingManager.sessionFailed(session, error: error)
            return
        }
        guard routes[session.id]?.client != nil else {
            routingManager.sessionFailed(session, error: MediaDeviceError(.deviceNotActive, "the Cast channel to the device is not open"))
            return
        }
        Task { await self.run(session, identifier: identifier, content: .url(url), metadata: metadata) }
    }

    /// Launches the app, joins it and loads `content`; a URL session is reported started, a
    /// live stream (the route's real-time audio) runs under the route's samples instead.
    func run(_ session: MediaOutputSession, identifier: String?, content: CastContent, metadata: PlaybackMetadata) async {
        do {
            let application = try await launch(identifier ?? CastNamespace.defaultMediaReceiver, on: session.id)
            guard let route = routes[session.id], let client = route.client else { throw MediaDeviceError(.deviceNotActive, "the route ended") }
            try await client.send(.connect, from: route.senderID, to: application.transportId)
            var playback = Playback(application: application, applicationIdentifier: identifier)
            if let identifier { playback.dataNamespace = dataNamespace(of: application, identifier: identifier) }
            routes[session.id]?.playback = playback
            let namespaces = application.namespaces?.map(\.name) ?? []
            let playsMedia = identifier == nil || namespaces.contains(CastNamespace.media)
            let control = PlaybackControl(
                initial: PlaybackSnapshot(
                    state: playsMedia ? .loading : .playing, timestamp: clock.now(), metadata: metadata, volume: Float(route.volume.level ?? 1),
                    isMuted: route.volume.muted ?? false),
                clock: clock)
            routes[session.id]?.playback?.control = control
            if playsMedia {
                let item: CastMediaItem
                switch content {
                case .url(let url):
                    item = CastMediaItem(
                        contentID: try await contentID(for: url, on: session.id), contentType: Self.contentType(of: url),
                        streamType: metadata.isLive ? .live : .buffered, title: metadata.title ?? (url.isFileURL ? url.lastPathComponent : nil),
                        artist: metadata.artist, album: metadata.album, imageURL: metadata.artworkURL?.absoluteString, duration: metadata.duration)
                case .live(let stream):
                    item = CastMediaItem(
                        contentID: try await liveContentID(for: stream, on: session.id), contentType: stream.mimeType,
                        streamType: .live, title: metadata.title, artist: metadata.artist, album: metadata.album,
                        imageURL: metadata.artworkURL?.absoluteString, duration: nil)
                case .video(let stream):
                    let id = session.id
                    let url = try await servedLiveURL(named: "video.mp4", on: id, respond: { stream.response(to: $0) }) { [weak self] in
                        await self?.liveVideos[id] === stream
                    }
                    item = CastMediaItem(
                        contentID: url, contentType: stream.mimeType, streamType: .live, title: metadata.title, artist: metadata.artist,
                        album: metadata.album, imageURL: metadata.artworkURL?.absoluteString, duration: nil)
                }
                let reply = try await client.request(
                    .load(item, sessionID: application.sessionId, autoplay: true, currentTime: 0, requestID: await client.requestID()),
                    from: route.senderID, to: application.transportId)
                switch reply {
                case .mediaStatus(let list, _):
                    guard let status = list.first else { throw MediaDeviceError(.sessionFailed, "the receiver answered LOAD with no media session") }
                    routes[session.id]?.playback?.mediaSessionID = status.mediaSessionId
                    mediaStatus(status, on: session.id)
                case .loadFailed(let type, let reason, _):
                    throw MediaDeviceError(.sessionFailed, "the receiver could not load \(content.description.prefix(200)) (\(type)\(reason.map { ", \($0)" } ?? ""))")
                case .refused(let type, let reason, _):
                    throw MediaDeviceError(.sessionFailed, "the receiver refused LOAD (\(type)\(reason.map { ", \($0)" } ?? ""))")
                default:
                    throw MediaDeviceError(.sessionFailed, "the receiver answered LOAD with \(reply)")
                }
            }
            guard routes[session.id]?.playback != nil else { throw MediaDeviceError(.sessionFailed, "the app stopped while starting") }
            routes[session.id]?.playback?.commands = Task { await self.consume(control.commands, on: session.id) }
            if case .live = content {
                liveStarted(session)
            } else if case .video(let stream) = content {
                videoStarted(stream, session: session)
            } else {
                routingManager.started(application: identifier, playbackControl: control, session: session)
            }
        } catch {
            if let playback = routes[session.id]?.playback {
                routes[session.id]?.playback = nil
                withdrawFiles(of: playback)
                playback.control?.finish()
            }
            if case .live = content { liveStreams.removeValue(forKey: session.id)?.stream?.finish() }
            if case .video(let stream) = content, liveVideos[session.id] === stream { liveVideos.removeValue(forKey: session.id)?.finish() }
            routingManager.sessionFailed(session, error: Self.mediaError(error, activating: false))
        }
    }

    /// The app running with `appID`, launched unless it runs already.
    private func launch(_ appID: String, on id: UUID) async throws -> CastApplication {
        guard let client = routes[id]?.client else { throw MediaDeviceError(.deviceNotActive, "the Cast channel is not open") }
        let status = try await client.request(
            .getReceiverStatus(requestID: await client.requestID()), from: CastNamespace.platformSender, to: CastNamespace.platformReceiver)
        if case .receiverStatus(let current, _) = status, let running = current.applications?.first(where: { $0.appId == appID }) {
            return running
        }
        var reply = try await client.request(.launch(appID: appID, requestID: await client.requestID()), from: CastNamespace.platformSender, to: CastNamespace.platformReceiver)
        let deadline = clock.now() + max(configuration.requestTimeout, .seconds(30))
        while true {
            switch reply {
            case .receiverStatus(let status, _):
                if let running = status.applications?.first(where: { $0.appId == appID }) { return running }
            case .launchError(let reason, _), .refused(_, let reason, _):
                throw MediaDeviceError(.sessionFailed, "the receiver did not launch \(appID) (\(reason ?? "no reason given"))")
            default:
                break
            }
            // Some receivers answer LAUNCH before the app is up: its status is asked again.
            guard clock.now() < deadline else { throw MediaDeviceError(.timedOut, "\(appID) did not start on the receiver") }
            try await clock.sleep(for: .milliseconds(300))
            reply = try await client.request(
                .getReceiverStatus(requestID: await client.requestID()), from: CastNamespace.platformSender, to: CastNamespace.platformReceiver)
        }
    }

    private func dataNamespace(of application: CastApplication, identifier: String) -> String {
        if let configured = configuration.applicationNamespaces[identifier], CastNamespace.isApplicationNamespace(configured) { return configured }
        if let own = application.namespaces?.map(\.name).first(where: { CastNamespace.isApplicationNamespace($0) && $0 != CastNamespace.media }) {
            return own
        }
        return "urn:x-cast:" + identifier
    }

    // MARK: Local files

    /// A receiver fetches http(s) URLs itself; a local file it fetches from us. Anything else
    /// (or a file we cannot read) is refused before the receiver is asked.
    static func checkPlayable(_ url: URL) throws(MediaDeviceError) {
        if url.isFileURL {
            guard ServedFiles.isReadableFile(atPath: url.path) else { throw MediaDeviceError(.invalidArgument, "\(url.path) is not a readable file") }
            return
        }
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw MediaDeviceError(.invalidArgument, "a Cast receiver plays http(s) URLs and local files, not \(url.scheme ?? "this") URLs")
        }
    }

    /// What the receiver fetches for `url`: the URL itself, or for a local file our server's
    /// URL on the address facing the receiver, served to the receiver's address only and only
    /// until the session ends (the token is the session's).
    private func contentID(for url: URL, on id: UUID) async throws -> String {
        guard url.isFileURL else { return url.absoluteString }
        guard let route = routes[id] else { throw MediaDeviceError(.deviceNotActive, "the route ended") }
        guard let facing = route.endpoint.facts.interfaceAddress, case .ip(let host, _, _) = route.endpoint.address else {
            throw MediaDeviceError(.sessionFailed, "no local address faces \(route.device.displayName) to serve \(url.lastPathComponent) from")
        }
        let file = ServedFiles.File(path: url.path, mimeType: Self.contentType(of: url), allowedHost: host)
        let offered: (url: String, token: String)
        do {
            offered = try await files.offer(file, named: url.lastPathComponent, on: facing, via: fileServers)
        } catch {
            throw MediaDeviceError(.sessionFailed, error.description)
        }
        guard routes[id]?.playback != nil else {
            files.remove(offered.token)
            throw MediaDeviceError(.deviceNotActive, "the session ended")
        }
        routes[id]?.playback?.fileTokens.append(offered.token)
        return offered.url
    }

    /// Stops serving what a session handed to its receiver.
    func withdrawFiles(of playback: Playback?) {
        for token in playback?.fileTokens ?? [] { files.remove(token) }
    }

    /// How many local files are being served (for tests: zero once sessions end).
    public var servedFileCount: Int { files.count }

    /// The MIME type receivers need for `LOAD`, from the URL's extension.
    static func contentType(of url: URL) -> String {
        let types = [
            "mp3": "audio/mpeg", "m4a": "audio/mp4", "aac": "audio/aac", "flac": "audio/flac", "ogg": "audio/ogg", "opus": "audio/ogg", "wav": "audio/wav",
            "mp4": "video/mp4", "m4v": "video/mp4", "webm": "video/webm", "mkv": "video/x-matroska", "m3u8": "application/x-mpegURL",
            "mpd": "application/dash+xml", "jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png",
        ]
        return types[url.pathExtension.lowercased()] ?? "video/mp4"
    }

    /// Carries the app's commands to the media session, in order.
    private func consume(_ commands: AsyncStream<PlaybackCommand>, on id: UUID) async {
        for await command in commands {
            guard let route = routes[id], let playback = route.playback else { return }
            guard let client = route.client else {
                // Down while reconnecting: the command is lost, and the state after the reconnect says so.
                continue
            }
            let transport = playback.application.transportId
            do {
                switch command {
                case .setVolume(let level): try await setReceiverVolume(level: Double(level), muted: nil, on: id)
                case .setMuted(let muted): try await setReceiverVolume(level: nil, muted: muted, on: id)
                case .stop:
                    stopSession(route.session)
                    return
                case .play, .pause, .seek:
                    guard let media = playback.mediaSessionID else { continue }
                    let request: CastRequest =
                        switch command {
                        case .play: .play(mediaSessionID: media, requestID: await client.requestID())
                        case .pause: .pause(mediaSessionID: media, requestID: await client.requestID())
                        case .seek(let time): .seek(mediaSessionID: media, to: time, requestID: await client.requestID())
                        default: .getMediaStatus(mediaSessionID: media, requestID: await client.requestID())
                        }
                    let appliedBefore = routes[id]?.playback?.statusesApplied
                    let reply = try await client.request(request, from: route.senderID, to: transport)
                    // The reply resumes this task after the receiver's broadcasts may have been
                    // applied (its own status of the command, or a pause from the device after it):
                    // applied only when nothing newer was.
                    if case .mediaStatus(let list, _) = reply, let status = list.first(where: { $0.mediaSessionId == media }),
                        routes[id]?.playback?.statusesApplied == appliedBefore
                    {
                        mediaStatus(status, on: id)
                    }
                case .setSpeed, .selectAudible, .selectLegible:
                    logger.debug("Cast: command not carried", metadata: ["command": "\(command)"])
                }
            } catch {
                logger.notice("Cast command failed", metadata: ["command": "\(command)", "error": "\(error)"])
            }
        }
    }

    /// The receiver's `MEDIA_STATUS` as the session's state: player state, position at its
    /// timestamp, rate, duration; `IDLE` with a reason ends the session.
    func mediaStatus(_ status: CastMediaStatus, on id: UUID) {
        guard let route = routes[id], let playback = route.playback, let control = playback.control else { return }
        if playback.mediaSessionID == nil { routes[id]?.playback?.mediaSessionID = status.mediaSessionId }
        guard playback.mediaSessionID == nil || playback.mediaSessionID == status.mediaSessionId else { return }
        routes[id]?.playback?.statusesApplied += 1
        let now = clock.now()
        if status.playerState == "IDLE", let reason = status.idleReason, liveStreams[id]?.stream != nil, !playback.stopping {
            // A live stream has no end of its own: the receiver stopping it ends the route's audio.
            failLive(route.session, MediaDeviceError(reason == "ERROR" ? .sessionFailed : .cancelled, "\(route.device.displayName) stopped the live stream (\(reason))"))
        }
        if let stream = liveStreams[id]?.stream {
            // The receiver's position on its clock, as the status arrives: the stream follows its rate.
            // Positions count from the first samples: a receiver loaded before them waits at zero.
            if status.playerState == "PLAYING", let time = status.currentTime, time.isFinite, stream.bytes.statistics.bytesWritten > 0 {
                stream.devicePlayed(time)
                noteMeasuredLatency(of: stream, route: route)
                if let off = stream.timelineChange(precision: configuration.live.timelinePrecision) {
                    let reason = stream.driftStatus.timelineReason(off: off)
                    logger.log(level: off ? .warning : .info, "live stream timeline", metadata: ["device": "\(route.device.displayName)", "change": "\(reason)"])
                    routingManager.routeChanged(route.session, reason: reason)
                }
            } else {
                stream.deviceStopped()
            }
        }
        control.update { snapshot in
            switch status.playerState {
            case "PLAYING": snapshot.state = .playing
            case "PAUSED": snapshot.state = .paused
            case "BUFFERING": snapshot.state = .buffering
            case "LOADING": snapshot.state = .loading
            case "IDLE":
                switch status.idleReason {
                case "ERROR": snapshot.state = .failed
                case "FINISHED", "CANCELLED", "INTERRUPTED": snapshot.state = .ended
                default: snapshot.state = .idle
                }
            default: break
            }
            if let time = status.currentTime, time.isFinite { snapshot.position = max(time, 0) }
            snapshot.timestamp = now
            let rate = status.playbackRate.flatMap { $0.isFinite && $0 > 0 ? $0 : nil } ?? 1
            snapshot.playbackSpeed = snapshot.state == .playing ? rate : 0
            if let duration = status.media?.duration, duration.isFinite, duration > 0 {
                snapshot.metadata.duration = duration
                snapshot.timeRange = 0...duration
            }
            if let volume = status.volume {
                if let level = volume.level, level.isFinite { snapshot.volume = Float(min(max(level, 0), 1)) }
                if let muted = volume.muted { snapshot.isMuted = muted }
            }
        }
    }

    /// Cast v2 over TLS: the receiver fetches the URL and plays it on its own clock.
    public func routeDetails(session: MediaOutputSession) -> RouteStatus.Details {
        var details = RouteStatus.Details(protocolVersion: "Google Cast (CASTV2)", timing: .deviceClock)
        if let stream = liveStreams[session.id]?.stream {
            details.codec = stream.encoding.codecName
            details.bitrate = stream.bitrate
            stream.driftStatus.apply(to: &details)
        }
        return details
    }

    public func stopSession(_ session: MediaOutputSession) {
        guard let route = routes[session.id], let playback = route.playback else { return }
        routes[session.id]?.playback?.stopping = true
        playback.commands?.cancel()
        Task {
            if let client = route.client {
                if let media = playback.mediaSessionID {
                    _ = try? await client.request(.stopMedia(mediaSessionID: media, requestID: await client.requestID()), from: route.senderID, to: playback.application.transportId)
                }
                try? await client.send(.close, from: route.senderID, to: playback.application.transportId)
                _ = try? await client.request(
                    .stopApplication(sessionID: playback.application.sessionId, requestID: await client.requestID()),
                    from: CastNamespace.platformSender, to: CastNamespace.platformReceiver)
            }
            self.sessionStopped(session.id, playback.application.sessionId)
        }
    }

    private func sessionStopped(_ id: UUID, _ appSession: String) {
        guard let playback = routes[id]?.playback, playback.application.sessionId == appSession else { return }
        routes[id]?.playback = nil
        withdrawFiles(of: playback)
        playback.control?.update { $0.state = .ended }
        playback.control?.finish()
    }

    /// Adds `url` after what plays (`QUEUE_INSERT`): the receiver plays it next.
    /// - Throws: ``MediaDeviceError`` `.deviceNotActive` without a media session, `.sessionFailed` when refused.
    public func enqueue(_ url: URL, metadata: PlaybackMetadata = PlaybackMetadata(), session: MediaOutputSession) async throws(MediaDeviceError) {
        guard let route = routes[session.id], let client = route.client, let playback = route.playback, let media = playback.mediaSessionID else {
            throw MediaDeviceError(.deviceNotActive, "nothing plays on this route to queue after")
        }
        try Self.checkPlayable(url)
        do {
            let item = CastMediaItem(
                contentID: try await contentID(for: url, on: session.id), contentType: Self.contentType(of: url),
                streamType: metadata.isLive ? .live : .buffered, title: metadata.title ?? (url.isFileURL ? url.lastPathComponent : nil),
                artist: metadata.artist, album: metadata.album, imageURL: metadata.artworkURL?.absoluteString, duration: metadata.duration)
            let reply = try await client.request(
                .queueInsert([item], mediaSessionID: media, requestID: await client.requestID()), from: route.senderID, to: playback.application.transportId)
            switch reply {
            case .mediaStatus(let list, _):
                if let status = list.first(where: { $0.mediaSessionId == media }) { mediaStatus(status, on: session.id) }
            case .refused(let type, let reason, _), .loadFailed(let type, let reason, _):
                throw MediaDeviceError(.sessionFailed, "the receiver refused QUEUE_INSERT (\(type)\(reason.map { ", \($0)" } ?? ""))")
            default:
                break
            }
        } catch let error as MediaDeviceError {
            throw error
        } catch {
            throw Self.mediaError(error, activating: false)
        }
    }

    // MARK: Data channel

    /// Sends the app's data to its receiver app, in the app's namespace (text when it is UTF-8).
    public func sendData(_ data: Data, toApplication applicationIdentifier: String, session: MediaOutputSession) {
        guard let route = routes[session.id], let client = route.client, let playback = route.playback,
            playback.applicationIdentifier == applicationIdentifier, let namespace = playback.dataNamespace
        else {
            logger.notice("Cast: data for an application that does not run on the route", metadata: ["application": "\(applicationIdentifier.prefix(64))"])
            return
        }
        let bytes = [UInt8](data)
        let payload: CastEnvelope.Payload = String(validating: bytes, as: UTF8.self).map { .text($0) } ?? .binary(bytes)
        let envelope = CastEnvelope(sourceID: route.senderID, destinationID: playback.application.transportId, namespace: namespace, payload: payload)
        Task {
            do {
                try await client.send(envelope)
            } catch {
                self.logger.notice("Cast: application data not sent", metadata: ["error": "\(error)"])
            }
        }
    }

    // MARK: Volume

    func setReceiverVolume(level: Double?, muted: Bool?, on id: UUID) async throws {
        guard let client = routes[id]?.client else { throw MediaDeviceError(.deviceNotActive, "the Cast channel is not open") }
        let reply = try await client.request(
            .setVolume(level: level, muted: muted, requestID: await client.requestID()), from: CastNamespace.platformSender, to: CastNamespace.platformReceiver)
        if case .receiverStatus(let status, _) = reply {
            guard let route = routes[id] else { return }
            if let volume = status.volume {
                routes[id]?.volume = CastVolume(level: volume.level ?? route.volume.level, muted: volume.muted ?? route.volume.muted)
            }
            announceVolume(id)
        }
    }

    private func route(of device: MediaOutputDevice) -> UUID? {
        routes.first { $0.value.device.id == device.id }?.key
    }

    public func setVolume(_ volume: Float, for device: MediaOutputDevice) {
        guard let id = route(of: device) else { return }
        let level = volume.isFinite ? Double(min(max(volume, 0), 1)) : 0
        Task {
            do {
                try await self.setReceiverVolume(level: level, muted: nil, on: id)
            } catch {
                self.logger.notice("Cast volume not set", metadata: ["error": "\(error)"])
            }
        }
    }

    public func volume(for device: MediaOutputDevice) -> Float {
        route(of: device).flatMap { routes[$0]?.volume.level }.map { Float($0) } ?? 1
    }

    public func changeVolume(by increments: Int, for device: MediaOutputDevice) {
        setVolume(volume(for: device) + Float(increments) * 0.05, for: device)
    }

    public func muteDevice(_ device: MediaOutputDevice) { setMuted(true, device) }
    public func unmuteDevice(_ device: MediaOutputDevice) { setMuted(false, device) }

    public func isDeviceMuted(_ device: MediaOutputDevice) -> Bool {
        route(of: device).flatMap { routes[$0]?.volume.muted } ?? false
    }

    private func setMuted(_ muted: Bool, _ device: MediaOutputDevice) {
        guard let id = route(of: device) else { return }
        Task { try? await self.setReceiverVolume(level: nil, muted: muted, on: id) }
    }
}
