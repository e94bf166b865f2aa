#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HTTPServing
public import LiveStreaming
import VideoStreaming
public import MediaDevice
public import RoutingModel

/// What a Cast session loads: a URL, or the route's real-time audio as a live stream.
enum CastContent: CustomStringConvertible {
    case url(URL)
    case live(LiveAudioStream)
    /// The route's real-time video (``LiveVideoStream``, fragmented MP4).
    case video(LiveVideoStream)

    var description: String {
        switch self {
        case .url(let url): url.absoluteString
        case .live(let stream): "the live stream (\(stream.mimeType))"
        case .video(let stream): "the live video (\(stream.mimeType))"
        }
    }
}

extension CastExtension {
    /// WAV, the one encoding of the Default Media Receiver's documented formats with no frame
    /// delay (L16 without a header is not among them); chunked, which Chrome's media stack takes;
    /// the test receiver's measured latency by default (Docs/cast.md).
    public static var defaultLiveSettings: LiveStreamSettings { LiveStreamSettings(preference: [.wav], framing: .chunked, latency: .milliseconds(1000)) }
}

/// One route's live audio to its receiver.
struct CastLiveRoute {
    var stream: LiveAudioStream?
    var nowPlaying: RealtimeNowPlaying?
}

extension CastExtension: RealtimeSampleHandling {
    /// 16-bit (or float, converted) PCM at 44.1 or 48 kHz, mono or stereo, sent as WAV. The
    /// latency is the configured figure (`live-latency`, 1 s by default) until the receiver's
    /// positions measure it (``noteMeasuredLatency(of:route:)``).
    public func realtimeAudioSupport(session: MediaOutputSession) -> RealtimeAudioSupport {
        var support = RealtimeAudioSupport.standard
        support.latency = measuredLiveLatency[session.id] ?? configuration.live.latency(name: routes[session.id]?.device.displayName ?? "")
        support.deliveryPeriod = configuration.live.deliveryPeriod
        return support
    }

    /// A measure moves the declared latency when it first comes and whenever it strays this far
    /// from the figure declared: a route event each time (a group leads its members in again),
    /// not one per status.
    static let latencyStep: Duration = .milliseconds(20)

    /// The receiver's positions measured its latency (``LiveAudioStream/measuredDeviceLatency``):
    /// the route declares it from now on — `status`, the next `AcquireAudio`, a group's leads.
    func noteMeasuredLatency(of stream: LiveAudioStream, route: Route) {
        guard let measured = stream.measuredDeviceLatency, measured > .zero else { return }
        let id = route.session.id
        let before = measuredLiveLatency[id]
        let declared = before ?? configuration.live.latency(name: route.device.displayName)
        guard before == nil || abs((measured - declared) / .milliseconds(1)) >= Double(Self.latencyStep / .milliseconds(1)) else { return }
        measuredLiveLatency[id] = measured
        let (now, was) = (Int((measured / .milliseconds(1)).rounded()), Int((declared / .milliseconds(1)).rounded()))
        logger.info("live stream latency measured", metadata: ["device": "\(route.device.displayName)", "latency": "\(now) ms", "declared": "\(was) ms"])
        routingManager.routeChanged(route.session, reason: "latency \(now) ms by the receiver's positions (declared \(was) ms)")
    }

    public func startRealtimeSampleDelivery(session: MediaOutputSession) {
        guard liveStreams[session.id] == nil else { return }
        liveStreams[session.id] = CastLiveRoute()
    }

    /// The stream ends; the receiver plays what it was sent, then its app is stopped (unless a
    /// new stream was loaded on it meanwhile).
    public func stopRealtimeSampleDelivery(session: MediaOutputSession) {
        guard let live = liveStreams.removeValue(forKey: session.id) else { return }
        live.stream?.finish()
        guard let stream = live.stream else { return stopSession(session) }
        let name = routes[session.id]?.device.displayName ?? ""
        let (latency, drain) = (configuration.live.latency(name: name), configuration.live.drainTime(name: name))
        Task {
            await stream.drained(within: drain, latency: latency, clock: clock)
            if self.liveStreams[session.id] == nil { self.stopSession(session) }
        }
    }

    public func receiveSamples(_ buffer: SampleBuffer, session: MediaOutputSession) {
        guard let live = liveStreams[session.id] else { return }
        // Shown video carries the route's audio; the audio stream goes on beside it for when the video ends.
        liveVideos[session.id]?.receiveAudio(buffer)
        if let stream = live.stream, stream.takes(buffer.format) {
            stream.append(buffer)
            return
        }
        // The first buffer, or a new format: a new stream, loaded on the receiver.
        startLiveStream(buffer.format, session: session)?.append(buffer)
    }

    /// The app acquired the route's audio: the stream is made and loaded on the receiver now, so
    /// that it has fetched it and waits when the first samples come.
    public func prepareRealtimeSamples(_ format: SampleBuffer.Format, session: MediaOutputSession) {
        guard let live = liveStreams[session.id] else { return }
        if let stream = live.stream, stream.takes(format) { return }
        guard let stream = startLiveStream(format, session: session) else { return }
        let wait = configuration.live.preparedWait
        Task {
            try? await clock.sleep(for: wait)
            self.stopIfNeverFed(stream, session: session)
        }
    }

    /// A stream loaded before the app's first samples that got none within the prepared wait:
    /// the receiver's app is stopped and the first samples load a stream again.
    private func stopIfNeverFed(_ stream: LiveAudioStream, session: MediaOutputSession) {
        guard liveStreams[session.id]?.stream === stream, stream.bytes.statistics.bytesWritten == 0 else { return }
        logger.info("no samples yet: the receiver waits no longer", metadata: ["device": "\(routes[session.id]?.device.displayName ?? "?")"])
        liveStreams[session.id]?.stream = nil
        stream.finish()
        stopSession(session)
    }

    /// A stream of `format`, loaded on the receiver (the one before it finished); nil when this
    /// box cannot encode what the receiver is to get.
    @discardableResult
    private func startLiveStream(_ format: SampleBuffer.Format, session: MediaOutputSession) -> LiveAudioStream? {
        guard let live = liveStreams[session.id] else { return nil }
        live.stream?.finish()
        let name = routes[session.id]?.device.displayName ?? ""
        let stream = LiveAudioStream(
            encoding: configuration.live.forcedEncodings[name] ?? configuration.live.preference.first ?? .wav, sampleRate: format.sampleRate,
            channels: format.channels, configuration: configuration.live.streamConfiguration(name: name))
        if let failure = stream.encoderFailure {
            logger.error("no live stream: this box cannot encode \(stream.encoding.codecName) (\(failure))", metadata: ["device": "\(name)"])
            return nil
        }
        liveStreams[session.id]?.stream = stream
        // While video is shown the receiver plays that; this stream is loaded when it ends.
        guard liveVideos[session.id] == nil else { return stream }
        var metadata = live.nowPlaying?.metadata ?? PlaybackMetadata()
        metadata.isLive = true
        metadata.duration = nil
        Task {
            await self.run(session, identifier: nil, content: .live(stream), metadata: metadata)
        }
        return stream
    }

    public func updateRealtimeNowPlaying(_ nowPlaying: RealtimeNowPlaying, session: MediaOutputSession) {
        liveStreams[session.id]?.nowPlaying = nowPlaying
    }

    /// The URL the receiver fetches the live stream at, served to its address only while the
    /// session lasts.
    func liveContentID(for stream: LiveAudioStream, on id: UUID) async throws -> String {
        try await servedLiveURL(named: "live." + stream.encoding.fileExtension, on: id, respond: { stream.response(to: $0) }) { [weak self] in
            await self?.liveStreams[id]?.stream === stream
        }
    }

    /// The URL the receiver fetches a live stream (audio or video) at, answered by `respond`,
    /// served to its address only while the session lasts and `stillWanted` says so.
    func servedLiveURL(
        named name: String, on id: UUID, respond: @escaping @Sendable (HTTPServerRequest) -> HTTPServerResponse,
        stillWanted: @Sendable () async -> Bool
    ) async throws -> String {
        guard let route = routes[id] else { throw MediaDeviceError(.deviceNotActive, "the route ended") }
        guard let facing = route.endpoint.facts.interfaceAddress, case .ip(let host, _, _) = route.endpoint.address else {
            throw MediaDeviceError(.sessionFailed, "no local address faces \(route.device.displayName) to serve the live stream from")
        }
        let entry = ServedFiles.Live(allowedHost: host, respond: respond)
        let offered: (url: String, token: String)
        do {
            offered = try await files.offer(entry, named: name, on: facing, via: fileServers)
        } catch {
            throw MediaDeviceError(.sessionFailed, error.description)
        }
        guard routes[id]?.playback != nil, await stillWanted() else {
            files.remove(offered.token)
            throw MediaDeviceError(.deviceNotActive, "the session ended")
        }
        routes[id]?.playback?.fileTokens.append(offered.token)
        return offered.url
    }

    /// The receiver loaded the live stream: it must fetch it within the fetch timeout.
    func liveStarted(_ session: MediaOutputSession) {
        guard let stream = liveStreams[session.id]?.stream else { return }
        logger.info("live stream loaded", metadata: ["device": "\(routes[session.id]?.device.displayName ?? "?")", "format": "\(stream.mimeType)"])
        Task {
            try? await clock.sleep(for: configuration.live.fetchTimeout)
            self.checkFetched(stream, session: session)
        }
        Task { await self.askPositions(of: stream, session: session) }
    }

    /// Asks the receiver for its media status every ``LiveStreamSettings/positionInterval`` while
    /// the stream plays: receivers send it by themselves only when their state changes, and its
    /// `currentTime` is what the stream follows the receiver's clock by (``mediaStatus(_:on:)``).
    private func askPositions(of stream: LiveAudioStream, session: MediaOutputSession) async {
        while liveStreams[session.id]?.stream === stream {
            guard (try? await clock.sleep(for: configuration.live.positionInterval)) != nil else { return }
            // The receiver plays the route's video now (its positions are not this stream's); asked
            // again when the stream is loaded again after it.
            guard liveVideos[session.id] == nil else { return }
            guard liveStreams[session.id]?.stream === stream, let route = routes[session.id], let client = route.client,
                let playback = route.playback, let media = playback.mediaSessionID
            else { continue }
            let appliedBefore = playback.statusesApplied
            guard
                let reply = try? await client.request(
                    .getMediaStatus(mediaSessionID: media, requestID: await client.requestID()), from: route.senderID, to: playback.application.transportId)
            else { continue }
            if case .mediaStatus(let list, _) = reply, let status = list.first(where: { $0.mediaSessionId == media }),
                routes[session.id]?.playback?.statusesApplied == appliedBefore
            {
                mediaStatus(status, on: session.id)
            }
        }
    }

    private func checkFetched(_ stream: LiveAudioStream, session: MediaOutputSession) {
        guard liveStreams[session.id]?.stream === stream, stream.bytes.statistics.readersOpened == 0 else { return }
        let name = routes[session.id]?.device.displayName ?? "the receiver"
        failLive(session, MediaDeviceError(.timedOut, "\(name) did not fetch the live stream within \(configuration.live.fetchTimeout)"))
    }

    /// Ends the route's live audio with `error`.
    func failLive(_ session: MediaOutputSession, _ error: MediaDeviceError) {
        guard let live = liveStreams.removeValue(forKey: session.id) else { return }
        live.stream?.finish()
        stopSession(session)
        logger.notice("live stream ended", metadata: ["error": "\(error)"])
        routingManager.sessionFailed(session, error: error)
    }
}
