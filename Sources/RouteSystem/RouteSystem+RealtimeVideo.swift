#if canImport(Glibc)
import Glibc
#endif
public import MediaDevice
import RealtimeVideo
import Logging
public import RoutingModel

/// One route's real-time video delivery.
struct VideoDeliveryRecord {
    let token: UInt64
    let delivery: PacedVideoDelivery
    /// The counts when the writer ended (the delivery's thread is gone then).
    var final: RealtimeVideoStatistics?
}

extension RouteSystem {
    /// Opens real-time video on a route (`Session1.AcquireVideo`): the device is pointed at a
    /// stream of the pictures written into the descriptor returned, paced to `format`'s rate on
    /// a thread of the route's own. A video already open on the route ends first.
    /// - Throws: deviceNotActive, unsupported (the device shows no video the box can send; the
    ///   reason says why), or the extension's error starting the device.
    public func acquireVideo(on session: MediaOutputSession, format: VideoFrameFormat) async throws -> VideoAcquisition {
        guard let route = routes(session), let loaded = loadedExtension(for: route.key.protocolID) else {
            throw MediaDeviceError(.deviceNotActive, "\(session) is not active")
        }
        guard route.device.capabilities.contains(.realtimeVideoStreaming), let handler = loaded.instance as? any RealtimeVideoHandling else {
            throw MediaDeviceError(.unsupported, "\(route.device.displayName) shows no video MediaRoute sends")
        }
        await endVideoDelivery(session, forgetting: true)
        let started: Result<any RealtimeVideoReceiver, MediaDeviceError> = await loaded.call { _ in
            do throws(MediaDeviceError) {
                return .success(try await handler.startRealtimeVideo(format, session: session))
            } catch {
                return .failure(error)
            }
        }
        let receiver = try started.get()
        let (reader, writer) = try PacedVideoDelivery.socketPair(for: format)
        nextVideoDelivery += 1
        let token = nextVideoDelivery
        let delivery: PacedVideoDelivery
        do {
            do {
                delivery = try PacedVideoDelivery(
                    reading: reader, format: format, receiver: receiver, now: SampleBuffer.clockNow,
                    ended: { [weak self] statistics in Task { await self?.videoDeliveryEnded(session, token: token, statistics) } })
            } catch {
                close(reader)
                throw error
            }
            // From here the delivery owns the read end (closed by its thread, or when it goes unstarted).
            try delivery.start()
        } catch {
            close(writer)
            receiver.finish()
            await loaded.call { _ in await handler.stopRealtimeVideo(session: session) }
            throw error
        }
        videoDeliveries[session.id] = VideoDeliveryRecord(token: token, delivery: delivery)
        let latency = await loaded.call { _ in await handler.realtimeVideoLatency(session: session) }
        logger.info("real-time video acquired", metadata: ["device": "\(route.device.displayName)", "format": "\(format)", "codec": "\(receiver.codec)"])
        return VideoAcquisition(descriptor: writer, format: format, latency: latency)
    }

    /// Ends a route's real-time video now (`Session1.ReleaseVideo`); the device shows what it
    /// was sent, then stops.
    public func releaseVideo(on session: MediaOutputSession) async {
        await endVideoDelivery(session, forgetting: false)
    }

    /// Whether pictures still flow on the route (acquired, the writer not gone).
    func videoRunning(_ session: MediaOutputSession) -> Bool {
        guard let record = videoDeliveries[session.id] else { return false }
        return record.final == nil
    }

    /// How a route's real-time video goes; nil when none was acquired.
    public func videoStatistics(on session: MediaOutputSession) -> RealtimeVideoStatistics? {
        guard let record = videoDeliveries[session.id] else { return nil }
        return record.final ?? record.delivery.statistics
    }

    /// Stops the route's video delivery (its thread ends, the writer's socket closes) and tells
    /// the extension; with `forgetting` its statistics go too.
    /// `loaded` is the route's extension when the route is already gone from the table.
    func endVideoDelivery(_ session: MediaOutputSession, forgetting: Bool, via loaded: LoadedExtension? = nil) async {
        guard let record = videoDeliveries[session.id] else { return }
        if forgetting { videoDeliveries[session.id] = nil }
        guard record.final == nil else { return }
        record.delivery.stop()
        if !forgetting { videoDeliveries[session.id]?.final = record.delivery.statistics }
        await stopVideoHandler(session, via: loaded)
    }

    /// The writer closed (or the delivery was stopped): the counts are kept and the device stops.
    private func videoDeliveryEnded(_ session: MediaOutputSession, token: UInt64, _ statistics: RealtimeVideoStatistics) async {
        guard let record = videoDeliveries[session.id], record.token == token else { return }
        let wasRunning = record.final == nil
        videoDeliveries[session.id]?.final = statistics
        if let failure = statistics.failure {
            logger.warning("real-time video refused", metadata: ["session": "\(session)", "reason": "\(failure)"])
        }
        logger.info(
            "real-time video ended",
            metadata: [
                "session": "\(session)", "received": "\(statistics.framesReceived)", "sent": "\(statistics.framesSent)",
                "dropped": "\(statistics.framesDropped)", "repeated": "\(statistics.framesRepeated)", "not encoded": "\(statistics.framesNotEncoded)",
            ])
        if wasRunning { await stopVideoHandler(session) }
    }

    private func stopVideoHandler(_ session: MediaOutputSession, via known: LoadedExtension? = nil) async {
        guard let loaded = known ?? routes(session).flatMap({ loadedExtension(for: $0.key.protocolID) }),
            let handler = loaded.instance as? any RealtimeVideoHandling
        else { return }
        await loaded.call { _ in await handler.stopRealtimeVideo(session: session) }
    }
}
