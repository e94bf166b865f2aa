import MediaClock
public import MediaDevice
public import RoutingModel
import VideoStreaming

extension CastExtension: RealtimeVideoHandling {
    /// The Default Media Receiver is loaded with the video as a LIVE `video/mp4` stream
    /// (fragmented, a fragment per picture); the receiver fetches it from the box. A route with
    /// live audio has it as the MP4's second track while the video is shown (the receiver plays
    /// one media item), and its audio stream loaded again when the video ends.
    public func startRealtimeVideo(_ format: VideoFrameFormat, session: MediaOutputSession) async throws(MediaDeviceError) -> any RealtimeVideoReceiver {
        guard let route = routes[session.id], route.client != nil else {
            throw MediaDeviceError(.deviceNotActive, "the Cast channel to the device is not open")
        }
        guard route.device.capabilities.contains(.realtimeVideoStreaming) else {
            throw MediaDeviceError(.unsupported, "\(route.device.displayName) has no screen (a Cast audio device)")
        }
        stopRealtimeVideo(session: session)
        let audio = liveStreams[session.id]?.stream.map { SampleBuffer.Format(encoding: .pcmS16LE, sampleRate: $0.sampleRate, channels: $0.channels) }
        let stream = try LiveVideoStream(format: format, container: .fragmentedMP4, settings: configuration.video, audio: audio)
        liveVideos[session.id] = stream
        var metadata = liveStreams[session.id]?.nowPlaying?.metadata ?? PlaybackMetadata()
        if metadata.title?.isEmpty ?? true { metadata.title = "\(route.device.displayName) (live video)" }
        metadata.isLive = true
        metadata.duration = nil
        Task { await self.run(session, identifier: nil, content: .video(stream), metadata: metadata) }
        return stream
    }

    /// The stream ends; the receiver shows what it fetched, then its app is stopped.
    public func stopRealtimeVideo(session: MediaOutputSession) {
        guard let stream = liveVideos.removeValue(forKey: session.id) else { return }
        stream.finish()
        let (drain, latency) = (configuration.live.drainTime(name: ""), configuration.video.latency)
        let clock = self.clock
        Task {
            let deadline = clock.now() + drain
            while stream.bytes.statistics.readersOpen > 0, clock.now() < deadline {
                try? await clock.sleep(for: .milliseconds(50))
            }
            // With the route's audio to follow, only what a receiver holds after its last read.
            let audio = self.liveStreams[session.id]?.stream
            try? await clock.sleep(for: audio == nil ? latency : min(latency, .milliseconds(300)))
            guard self.liveVideos[session.id] == nil else { return }  // a new video was loaded meanwhile
            if let audio, let live = self.liveStreams[session.id] {
                var metadata = live.nowPlaying?.metadata ?? PlaybackMetadata()
                metadata.isLive = true
                metadata.duration = nil
                await self.run(session, identifier: nil, content: .live(audio), metadata: metadata)
            } else {
                self.stopSession(session)
            }
        }
    }

    public func realtimeVideoLatency(session: MediaOutputSession) -> Duration { configuration.video.latency }

    /// The receiver loaded the video: it must fetch it within the fetch timeout.
    func videoStarted(_ stream: LiveVideoStream, session: MediaOutputSession) {
        logger.info(
            "live video loaded",
            metadata: [
                "device": "\(routes[session.id]?.device.displayName ?? "?")", "format": "\(stream.format)", "encoder": "\(stream.hardwareEncoder ?? "OpenH264")",
                "passed over": "\(stream.hardwareEncoderRefusals)",
            ])
        Task {
            try? await clock.sleep(for: configuration.live.fetchTimeout)
            guard self.liveVideos[session.id] === stream, stream.bytes.statistics.readersOpened == 0 else { return }
            self.liveVideos.removeValue(forKey: session.id)?.finish()
            self.stopSession(session)
            let name = self.routes[session.id]?.device.displayName ?? "the receiver"
            self.routingManager.sessionFailed(
                session, error: MediaDeviceError(.timedOut, "\(name) did not fetch the live video within \(self.configuration.live.fetchTimeout)"))
        }
    }
}
