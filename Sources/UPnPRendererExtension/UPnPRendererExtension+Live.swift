import HTTPServing
public import LiveStreaming
import Logging
public import MediaDevice
import MediaClock
public import RoutingModel
internal import UPnP

/// One route's live audio to its renderer.
struct LiveRoute {
    /// The stream being served (nil until the first buffer says its format).
    var stream: LiveAudioStream?
    /// What the app says the audio is (the renderer's title).
    var nowPlaying: RealtimeNowPlaying?
}

extension UPnPRendererExtension {
    /// LPCM, then WAV; close-delimited responses (what internet radio sends, which every
    /// renderer's HTTP client takes); half a second of priming and 1 s of latency for a renderer
    /// of unknown kind (wired renderers on WAV measure 1–2 s in other senders' reports), and the
    /// figures measured here by model (Docs/upnp.md): gmediarender starts playing at once, so it
    /// is not primed; its latency, 30 ms, is the middle of where its starts put it in a group
    /// with shairport-sync (whose output is timed to the box's clock): its first play after it
    /// started loads a parser plugin and came 5–29 ms later than the others, later plays 6–9 ms
    /// earlier (`mediaroute-bench live-group-starts`), and nothing it reports tells them apart.
    /// gmediarender answers the position its player had at its last 500 ms timer tick (its
    /// `thread_update_track_time`): up to 0.6 s old, where an unknown renderer's may be 1 s.
    public static var defaultLiveSettings: LiveStreamSettings {
        LiveStreamSettings(
            framing: .closeDelimited, primes: ["gmediarender": .zero], latency: .milliseconds(1000), latencies: ["gmediarender": .milliseconds(30)],
            positionAges: ["gmediarender": .milliseconds(600)])
    }
}

extension UPnPRendererExtension: RealtimeSampleHandling {
    /// Whether `sinks` (a renderer's `GetProtocolInfo`) take a live encoding at all.
    static func takesLiveAudio(_ sinks: [ProtocolInfo]) -> Bool {
        let formats = sinks.filter { $0.transportProtocol == "http-get" }.map(\.contentFormat)
        return LiveAudioEncoding.allCases.contains { encoding in
            formats.contains { encoding.isTaken(by: $0, sampleRate: 44_100, channels: 2) || encoding.isTaken(by: $0, sampleRate: 48_000, channels: 2) }
        }
    }

    /// 16-bit (or float, converted) PCM at 44.1 or 48 kHz, mono or stereo; the latency is the
    /// renderer kind's calibrated one.
    public func realtimeAudioSupport(session: MediaOutputSession) -> RealtimeAudioSupport {
        let renderer = renderers[session.deviceID]
        var support = RealtimeAudioSupport.standard
        support.latency = configuration.live.latency(name: renderer?.device.displayName ?? "", model: renderer?.description.modelName)
        support.deliveryPeriod = configuration.live.deliveryPeriod
        return support
    }

    public func startRealtimeSampleDelivery(session: MediaOutputSession) {
        guard liveRoutes[session.id] == nil else { return }
        liveRoutes[session.id] = LiveRoute()
    }

    /// The stream ends; the renderer plays what it was sent, then is told to stop.
    public func stopRealtimeSampleDelivery(session: MediaOutputSession) {
        guard let live = liveRoutes.removeValue(forKey: session.id) else { return }
        live.stream?.finish()
        guard let running = sessions.removeValue(forKey: session.id) else { return }
        let renderer = renderers[session.deviceID]
        let latency = configuration.live.latency(name: renderer?.device.displayName ?? "", model: renderer?.description.modelName)
        let drain = configuration.live.drainTime(name: renderer?.device.displayName ?? "", model: renderer?.description.modelName)
        let clock = self.clock
        Task {
            await live.stream?.drained(within: drain, latency: latency, clock: clock)
            await self.endDrained(running, session: session)
        }
    }

    /// Stops the renderer after a drained stream, unless a new stream plays on it meanwhile
    /// (then only the old session's subscriptions end: a Stop would stop the new one).
    private func endDrained(_ running: RendererSession, session: MediaOutputSession) async {
        if sessions[session.id] == nil {
            await running.stop()
        } else {
            await running.stop(deviceGone: true)
        }
    }

    /// Returns once the renderer has read the ended stream to its end and had its latency to play
    /// it out, or after `limit` (a renderer that stopped reading).
    static func drained(_ stream: LiveAudioStream, within limit: Duration, latency: Duration, clock: any HostClock) async {
        let deadline = clock.now() + limit
        while stream.bytes.statistics.readersOpen > 0, clock.now() < deadline {
            try? await clock.sleep(for: .milliseconds(50))
        }
        try? await clock.sleep(for: latency)
    }

    public func receiveSamples(_ buffer: SampleBuffer, session: MediaOutputSession) {
        guard let live = liveRoutes[session.id] else { return }
        // Shown video carries the route's audio; the audio stream goes on beside it for when the video ends.
        videoRoutes[session.id]?.stream.receiveAudio(buffer)
        if let stream = live.stream, stream.takes(buffer.format) {
            stream.append(buffer)
            return
        }
        // The first buffer, or a new format: a new stream, and the renderer is pointed at it.
        guard let stream = startLiveStream(buffer.format, session: session) else { return }
        stream.append(buffer)
    }

    public func updateRealtimeNowPlaying(_ nowPlaying: RealtimeNowPlaying, session: MediaOutputSession) {
        liveRoutes[session.id]?.nowPlaying = nowPlaying
    }

    /// The app acquired the route's audio: the stream is made and the renderer told to play it
    /// now, so that it has fetched it and waits when the first samples come (a renderer set up
    /// after them costs SetAVTransportURI, Play, the fetch and its pipeline's start first).
    public func prepareRealtimeSamples(_ format: SampleBuffer.Format, session: MediaOutputSession) {
        guard let live = liveRoutes[session.id] else { return }
        if let stream = live.stream, stream.takes(format) { return }
        guard let stream = startLiveStream(format, session: session) else { return }
        let wait = configuration.live.preparedWait
        Task {
            try? await clock.sleep(for: wait)
            await self.stopIfNeverFed(stream, session: session)
        }
    }

    /// A stream started before the app's first samples that got none within the prepared wait:
    /// the renderer is stopped (it would give up waiting by itself, silently) and the first
    /// samples start it again.
    private func stopIfNeverFed(_ stream: LiveAudioStream, session: MediaOutputSession) async {
        guard liveRoutes[session.id]?.stream === stream, stream.bytes.statistics.bytesWritten == 0 else { return }
        logger.info("no samples yet: the renderer waits no longer", metadata: ["session": "\(session)"])
        liveRoutes[session.id]?.stream = nil
        stream.finish()
        if let running = sessions.removeValue(forKey: session.id) { await running.stop() }
    }

    /// A stream in the encoding the renderer takes, served to it and played; nil (the route
    /// failed) when it takes none.
    private func startLiveStream(_ format: SampleBuffer.Format, session: MediaOutputSession) -> LiveAudioStream? {
        guard let renderer = renderers[session.deviceID] else {
            failLive(session, MediaDeviceError(.deviceNotFound, "\(session.deviceID) is not on the LAN any more"))
            return nil
        }
        let name = renderer.device.displayName
        let offered = renderer.sinks.filter { $0.transportProtocol == "http-get" }.map(\.contentFormat)
        guard
            let encoding = configuration.live.forcedEncodings[name]
                ?? LiveAudioEncoding.choose(
                    from: offered, sampleRate: format.sampleRate, channels: format.channels, preference: configuration.live.preference)
        else {
            failLive(
                session,
                MediaDeviceError(
                    .unsupported, "\(name) lists no live format MediaRoute sends (\(LiveAudioEncoding.allCases.map(\.rawValue).joined(separator: ", "))) at \(format.sampleRate) Hz"))
            return nil
        }
        liveRoutes[session.id]?.stream?.finish()
        let candidate = LiveAudioStream(
            encoding: encoding, sampleRate: format.sampleRate, channels: format.channels,
            configuration: configuration.live.streamConfiguration(name: name, model: renderer.description.modelName),
            extraHeaders: Self.dlnaHeaders(for: encoding, sampleRate: format.sampleRate, channels: format.channels))
        if let failure = candidate.encoderFailure {
            failLive(session, MediaDeviceError(.unsupported, "\(name) takes \(encoding.codecName) only, and this box cannot encode it: \(failure)"))
            return nil
        }
        let stream = candidate
        liveRoutes[session.id]?.stream = stream
        Task { await self.playLive(stream, renderer: renderer, session: session) }
        return stream
    }

    /// DLNA's headers for a live stream: streaming transfer mode; no seeking of any kind
    /// (`OP=00`: the stream has no past to seek in); flags: DLNA 1.5, streaming, interactive and
    /// background transfer allowed; the LPCM profile where it is one.
    static func dlnaHeaders(for encoding: LiveAudioEncoding, sampleRate: Int, channels: Int) -> [(String, String)] {
        let profile = encoding.dlnaProfile(sampleRate: sampleRate, channels: channels).map { "DLNA.ORG_PN=\($0);" } ?? ""
        return [
            ("transferMode.dlna.org", "Streaming"),
            ("contentFeatures.dlna.org", profile + "DLNA.ORG_OP=00;DLNA.ORG_CI=0;DLNA.ORG_FLAGS=01700000000000000000000000000000"),
        ]
    }

    /// Serves `stream` to the renderer, sets it as the transport URI and plays; fails the route
    /// when the renderer does not fetch it within the fetch timeout.
    /// Points the renderer at the route's audio stream. While the route shows video the renderer
    /// plays that (the audio is in it); the audio stream is loaded when the video ends.
    func playLive(_ stream: LiveAudioStream, renderer: Renderer, session: MediaOutputSession) async {
        guard let live = liveRoutes[session.id], live.stream === stream, videoRoutes[session.id] == nil else { return }
        guard let facing = renderer.endpoint.facts.interfaceAddress, case .ip(let host, _, _) = renderer.endpoint.address else {
            return failLive(session, MediaDeviceError(.sessionFailed, "no local address faces \(renderer.device.displayName)"))
        }
        let entry = ServedFiles.Live(allowedHost: host) { stream.response(to: $0) }
        let name = "live." + stream.encoding.fileExtension
        let offered: (url: String, token: String)
        do {
            offered = try await servers.routes.files.offer(entry, named: name, on: facing, via: servers.pool)
        } catch {
            return failLive(session, MediaDeviceError(.sessionFailed, error.description))
        }
        guard liveRoutes[session.id]?.stream === stream else {
            servers.routes.files.remove(offered.token)
            return
        }
        var metadata = live.nowPlaying?.metadata ?? PlaybackMetadata()
        if metadata.title?.isEmpty ?? true { metadata.title = "\(renderer.device.displayName) (live)" }
        metadata.isLive = true
        metadata.duration = nil
        let running = RendererSession(
            renderer: renderer, session: session, control: PlaybackControl(clock: clock), configuration: configuration, servers: servers, clock: clock,
            logger: logger,
            fed: { stream.bytes.statistics.bytesWritten > 0 },
            positions: { [weak self, precision = configuration.live.timelinePrecision] position, roundTrip in
                // Positions count from the first samples: a renderer waiting for them stays at zero.
                guard let position, stream.bytes.statistics.bytesWritten > 0 else { return stream.deviceStopped() }
                stream.devicePlayed(position, roundTrip: roundTrip)
                if let off = stream.timelineChange(precision: precision) {
                    Task { await self?.timelineChanged(off: off, stream: stream, session: session) }
                }
            }
        ) { [weak self] report in
            guard let self else { return }
            Task { await self.handleLive(report, session: session) }
        }
        if let previous = sessions.updateValue(running, forKey: session.id) { await previous.stop() }
        do throws(MediaDeviceError) {
            try await running.start(mediaURL: offered.url, metadata: metadata, mimeType: stream.mimeType, fileToken: offered.token)
        } catch {
            if sessions[session.id] === running { sessions[session.id] = nil }
            return failLive(session, error)
        }
        logger.info(
            "live stream playing", metadata: ["device": "\(renderer.device.displayName)", "format": "\(stream.mimeType)", "url": "\(offered.url.prefix(80))"])
        // A renderer that said yes and never fetched is not playing anything.
        try? await clock.sleep(for: configuration.live.fetchTimeout)
        guard liveRoutes[session.id]?.stream === stream, stream.bytes.statistics.readersOpened == 0 else { return }
        failLive(
            session,
            MediaDeviceError(.timedOut, "\(renderer.device.displayName) did not fetch the live stream within \(configuration.live.fetchTimeout)"))
    }

    /// The renderer went off its timeline (or came back): an event on the route and a line in the log.
    private func timelineChanged(off: Bool, stream: LiveAudioStream, session: MediaOutputSession) {
        guard liveRoutes[session.id]?.stream === stream else { return }
        let reason = stream.driftStatus.timelineReason(off: off)
        logger.log(level: off ? .warning : .info, "live stream timeline", metadata: ["session": "\(session)", "change": "\(reason)"])
        routingManager.routeChanged(session, reason: reason)
    }

    private func handleLive(_ report: RendererSessionReport, session: MediaOutputSession) {
        switch report {
        case .failed(let error):
            guard liveRoutes[session.id] != nil else { return }
            failLive(session, error)
        case .volume:
            break
        }
    }

    /// Ends the route's live audio with `error` (the route's samples stop; an event says why).
    private func failLive(_ session: MediaOutputSession, _ error: MediaDeviceError) {
        guard let live = liveRoutes.removeValue(forKey: session.id) else { return }
        live.stream?.finish()
        if let running = sessions.removeValue(forKey: session.id) { Task { await running.stop() } }
        logger.notice("live stream ended", metadata: ["session": "\(session)", "error": "\(error)"])
        routingManager.sessionFailed(session, error: error)
    }
}
