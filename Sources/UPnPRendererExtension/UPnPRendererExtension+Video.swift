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
        let stream = try LiveVideoStream(
            format: format, settings: configuration.video,
            extraHeaders: [("transferMode.dlna.org", "Streaming"), ("contentFeatures.dlna.org", features)])
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
        logger.info("live video playing", metadata: ["device": "\(renderer.device.displayName)", "format": "\(format)", "sink": "\(protocolInfo)"])
        Task { await self.failIfNeverFetched(stream, session: session) }
        return stream
    }

    /// The stream ends; the renderer shows what it fetched, then is told to stop.
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
            // What the renderer fetched last is still in its pipeline: shown before it is stopped.
            try? await clock.sleep(for: latency)
            await video.session?.stop()
        }
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
