import HTTPServing
public import MediaDevice
import MediaClock
public import RoutingModel
internal import UPnP
import VideoStreaming

/// One route's real-time video to its renderer.
struct VideoRoute {
    let stream: LiveVideoStream
    /// The renderer told to play the stream (nil until it was).
    var session: RendererSession?
}

extension UPnPRendererExtension: RealtimeVideoHandling {
    /// The sink a live H.264 transport stream is sent as: an H.264 MPEG-TS DLNA profile of
    /// 188-byte packets (`AVC_TS_…_ISO`, or one without a suffix: both name plain transport
    /// streams) when the renderer lists one, else a transport stream listed with no profile
    /// (`video/mpeg`, `video/mp2t`, `video/mpegts`, as gmediarender lists them). Profiles of
    /// 192-byte timestamped packets (`video/vnd.dlna.mpeg-tts`, `…_T`) are not what is sent.
    static func videoSink(in sinks: [ProtocolInfo]) -> ProtocolInfo? {
        let http = sinks.filter { $0.transportProtocol == "http-get" }
        let transportStreams = ["video/mpeg", "video/mp2t", "video/mpegts"]
        func profile(_ info: ProtocolInfo) -> String? {
            info.additionalInfo.split(separator: ";").first { $0.hasPrefix("DLNA.ORG_PN=") }.map { String($0.dropFirst("DLNA.ORG_PN=".count)) }
        }
        let avc = http.filter { info in
            guard transportStreams.contains(info.contentFormat.lowercased()), let name = profile(info) else { return false }
            return name.hasPrefix("AVC_TS_") && !name.hasSuffix("_T")
        }
        // Among H.264 profiles, the ones for HD with AAC audio first (the audio a route may add later).
        if let best = avc.first(where: { profile($0)?.contains("AAC") == true }) ?? avc.first { return best }
        return http.first { transportStreams.contains($0.contentFormat.lowercased()) && profile($0) == nil }
    }

    /// The sink's DLNA profile, if it names one.
    static func dlnaProfile(of sink: ProtocolInfo) -> String? {
        sink.additionalInfo.split(separator: ";").first { $0.hasPrefix("DLNA.ORG_PN=") }.map { String($0.dropFirst("DLNA.ORG_PN=".count)) }
    }

    public func startRealtimeVideo(_ format: VideoFrameFormat, session: MediaOutputSession) async throws(MediaDeviceError) -> any RealtimeVideoReceiver {
        guard let renderer = renderers[session.deviceID] else {
            throw MediaDeviceError(.deviceNotFound, "\(session.deviceID) is not on the LAN any more")
        }
        guard let sink = Self.videoSink(in: renderer.sinks) else {
            throw MediaDeviceError(.unsupported, "\(renderer.device.displayName) lists no MPEG transport stream (video/mpeg) to show video in")
        }
        stopRealtimeVideo(session: session)
        let profile = Self.dlnaProfile(of: sink).map { "DLNA.ORG_PN=\($0);" } ?? ""
        let features = profile + "DLNA.ORG_OP=00;DLNA.ORG_CI=0;DLNA.ORG_FLAGS=01700000000000000000000000000000"
        // The route's audio, if it has live audio, goes in the video's stream (one AVTransport plays one stream).
        let audio = liveRoutes[session.id]?.stream.map { SampleBuffer.Format(encoding: .pcmS16LE, sampleRate: $0.sampleRate, channels: $0.channels) }
        let stream = try LiveVideoStream(
            format: format, settings: configuration.video,
            extraHeaders: [("transferMode.dlna.org", "Streaming"), ("contentFeatures.dlna.org", features)], audio: audio)
        videoRoutes[session.id] = VideoRoute(stream: stream)
        guard let facing = renderer.endpoint.facts.interfaceAddress, case .ip(let host, _, _) = renderer.endpoint.address else {
            videoRoutes[session.id] = nil
            throw MediaDeviceError(.sessionFailed, "no local address faces \(renderer.device.displayName)")
        }
        let offered: (url: String, token: String)
        do {
            offered = try await servers.routes.files.offer(ServedFiles.Live(allowedHost: host) { stream.response(to: $0) }, named: "video.ts", on: facing, via: servers.pool)
        } catch {
            videoRoutes[session.id] = nil
            throw MediaDeviceError(.sessionFailed, error.description)
        }
        guard videoRoutes[session.id]?.stream === stream else {
            servers.routes.files.remove(offered.token)
            throw MediaDeviceError(.cancelled, "the video was stopped while it started")
        }
        var metadata = liveRoutes[session.id]?.nowPlaying?.metadata ?? PlaybackMetadata()
        if metadata.title?.isEmpty ?? true { metadata.title = "\(renderer.device.displayName) (live video)" }
        metadata.isLive = true
        metadata.duration = nil
        let running = RendererSession(
            renderer: renderer, session: session, control: PlaybackControl(clock: clock), configuration: configuration, servers: servers, clock: clock,
            logger: logger, fed: { stream.bytes.statistics.bytesWritten > 0 }
        ) { [weak self] report in
            guard let self, case .failed(let error) = report else { return }
            Task { await self.failVideo(session, stream: stream, error) }
        }
        videoRoutes[session.id]?.session = running
        let protocolInfo = ProtocolInfo(contentFormat: sink.contentFormat, additionalInfo: features)
        do throws(MediaDeviceError) {
            try await running.start(mediaURL: offered.url, metadata: metadata, mimeType: sink.contentFormat, fileToken: offered.token, protocolInfo: protocolInfo)
        } catch {
            if videoRoutes[session.id]?.stream === stream { videoRoutes[session.id] = nil }
            stream.finish()
            throw error
        }
        // The audio stream's session ends without a Stop (the renderer plays the video now); its
        // stream goes on, to be loaded again when the video ends.
        if liveRoutes[session.id]?.stream != nil, let audioSession = sessions.removeValue(forKey: session.id) {
            await audioSession.stop(deviceGone: true)
        }
        logger.info(
            "live video playing",
            metadata: [
                "device": "\(renderer.device.displayName)", "format": "\(format)", "sink": "\(protocolInfo)", "audio": "\(stream.carriesAudio)",
                "encoder": "\(stream.hardwareEncoder ?? "OpenH264")", "passed over": "\(stream.hardwareEncoderRefusals)",
            ])
        Task { await self.failIfNeverFetched(stream, session: session) }
        return stream
    }

    /// The stream ends; the renderer shows what it fetched, then is told to stop — and, when the
    /// route has live audio, is loaded with the audio stream again (what it costs the sound:
    /// Docs/video.md).
    public func stopRealtimeVideo(session: MediaOutputSession) {
        guard let video = videoRoutes.removeValue(forKey: session.id) else { return }
        video.stream.finish()
        let clock = self.clock
        let drain = configuration.live.drainTime(name: "", model: nil)
        let latency = configuration.video.latency
        Task {
            let deadline = clock.now() + drain
            while video.stream.bytes.statistics.readersOpen > 0, clock.now() < deadline {
                try? await clock.sleep(for: .milliseconds(50))
            }
            // What the renderer fetched last is still in its pipeline: shown (and heard) before it is
            // stopped. With the route's audio to follow, only what a renderer holds after its last
            // read (the PCR lead and a picture or two: gmediarender shows a picture 160–200 ms after
            // its write), not the whole declared latency: the sound is off from then to the reload.
            let hasAudio = await self.liveRoutes[session.id]?.stream != nil
            try? await clock.sleep(for: hasAudio ? min(latency, Self.videoTailWithAudio) : latency)
            // Stopped even when the audio follows: gmediarender told to play another URI while its
            // pipeline ends the video's fails to start it ("setting play state failed").
            await video.session?.stop()
            await self.resumeLiveAudio(session)
        }
    }

    /// How long a renderer is left to show the end of the video before the route's audio is loaded again.
    static let videoTailWithAudio: Duration = .milliseconds(300)

    /// The route's audio stream on the renderer again, after its video.
    private func resumeLiveAudio(_ session: MediaOutputSession) async {
        guard videoRoutes[session.id] == nil, let audio = liveRoutes[session.id]?.stream, let renderer = renderers[session.deviceID] else { return }
        await playLive(audio, renderer: renderer, session: session)
    }

    public func realtimeVideoLatency(session: MediaOutputSession) -> Duration { configuration.video.latency }

    /// A renderer that said yes and never fetched is showing nothing: the route fails.
    private func failIfNeverFetched(_ stream: LiveVideoStream, session: MediaOutputSession) async {
        try? await clock.sleep(for: configuration.live.fetchTimeout)
        guard videoRoutes[session.id]?.stream === stream, stream.bytes.statistics.readersOpened == 0 else { return }
        failVideo(session, stream: stream, MediaDeviceError(.timedOut, "the renderer did not fetch the video within \(configuration.live.fetchTimeout)"))
    }

    /// Ends the route's video with `error` (an event says why; the writer's pictures go nowhere).
    private func failVideo(_ session: MediaOutputSession, stream: LiveVideoStream, _ error: MediaDeviceError) {
        guard let video = videoRoutes[session.id], video.stream === stream else { return }
        videoRoutes[session.id] = nil
        stream.finish()
        Task { await video.session?.stop() }
        logger.notice("live video ended", metadata: ["session": "\(session)", "error": "\(error)"])
        routingManager.sessionFailed(session, error: error)
    }
}
