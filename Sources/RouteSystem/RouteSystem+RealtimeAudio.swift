#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import MediaDevice
import RealtimeAudio

/// One paced delivery of real-time audio on a route.
struct AudioDeliveryRecord {
    let token: UInt64
    let delivery: PacedAudioDelivery
    let buffers: AsyncStream<AudioDeliveryItem>.Continuation
    let feeder: Task<Void, Never>
}

/// What goes to the extension, in order: samples, and flushes between them.
enum AudioDeliveryItem: Sendable {
    case samples(SampleBuffer)
    case flush
}

extension RouteSystem {
    /// How far the extension may fall behind before buffers are dropped rather than queued
    /// (25 ticks: half a second): a stuck device costs the daemon this much memory and no more.
    static let queuedBuffersForExtension = 25

    /// Opens paced real-time delivery of `format` on a route; see ``SystemRoutingBackend/acquireAudio(on:format:)``.
    ///
    /// The descriptor returned is the write end of a Unix stream socket with the smallest
    /// send buffer; the read end is read by a ``PacedAudioDelivery`` at the device's rate
    /// and its buffers go to the extension in order, through a queue of
    /// ``queuedBuffersForExtension`` buffers.
    public func acquireAudio(on session: MediaOutputSession, format: SampleBuffer.Format) async throws -> AudioAcquisition {
        let (handler, route) = try await startRealtimeHandler(on: session)
        let support = await handler.realtimeAudioSupport(session: session)
        guard format.bytesPerFrame != nil, support.accepts(format) else {
            throw MediaDeviceError(
                .unsupported,
                "\(route.device.displayName) takes \(support), not \(format.encoding.pcmName ?? "encoded frames") at \(format.sampleRate) Hz with \(format.channels) channels")
        }
        guard isRealtime(session) else { throw MediaDeviceError(.deviceNotActive, "\(session) is not active") }
        endAudioDelivery(session.id)

        let (reader, writer) = try PacedAudioDelivery.socketPair()
        let configuration = PacedAudioDelivery.Configuration()

        nextAudioDelivery += 1
        let token = nextAudioDelivery
        let (buffers, continuation) = AsyncStream.makeStream(
            of: AudioDeliveryItem.self, bufferingPolicy: .bufferingOldest(Self.queuedBuffersForExtension))
        let delivery: PacedAudioDelivery
        do {
            delivery = try PacedAudioDelivery(
                reading: reader, format: format, routeLatency: support.latency, configuration: configuration,
                deliver: { buffer in
                    if case .enqueued = continuation.yield(.samples(buffer)) { return true }
                    return false
                },
                ended: { [weak self] end in
                    continuation.finish()
                    Task { await self?.audioDeliveryEnded(session, token: token, end) }
                })
            try delivery.start()
        } catch {
            close(reader)
            close(writer)
            continuation.finish()
            throw MediaDeviceError(.sessionFailed, "real-time audio not started: \(error)")
        }
        let feeder = Task {
            for await item in buffers {
                switch item {
                case .samples(let buffer): await handler.receiveSamples(buffer, session: session)
                case .flush: await handler.flushRealtimeSamples(session: session)
                }
            }
        }
        audioDeliveries[session.id] = AudioDeliveryRecord(token: token, delivery: delivery, buffers: continuation, feeder: feeder)
        if let nowPlaying = realtimeNowPlaying[session.id] { await handler.updateRealtimeNowPlaying(nowPlaying, session: session) }
        logger.info(
            "real-time audio acquired",
            metadata: ["device": "\(route.device.displayName)", "format": "\(format.encoding.pcmName ?? "?")/\(format.sampleRate)/\(format.channels)"])
        return AudioAcquisition(
            descriptor: writer, format: format, latency: support.latency + PacedAudioDelivery.addedLatency(for: format, configuration: configuration))
    }

    /// Pauses a route's real-time audio: the device's clock stops, the writer blocks once its
    /// socket fills, and the device drops what it holds (``RealtimeSampleHandling/flushRealtimeSamples(session:)``)
    /// so the pause is heard now, not after the device's buffer.
    /// - Throws: deviceNotActive when no real-time audio was acquired on the route.
    public func pauseAudio(on session: MediaOutputSession) throws {
        guard let record = audioDeliveries[session.id], record.delivery.statistics.active else {
            throw MediaDeviceError(.deviceNotActive, "no real-time audio is playing on \(session)")
        }
        guard !record.delivery.isPaused else { return }
        record.delivery.pause()
        flush(record, session)
    }

    /// Resumes a route's real-time audio after ``pauseAudio(on:)``, at once.
    public func resumeAudio(on session: MediaOutputSession) throws {
        guard let record = audioDeliveries[session.id], record.delivery.statistics.active else {
            throw MediaDeviceError(.deviceNotActive, "no real-time audio is playing on \(session)")
        }
        record.delivery.resume()
    }

    /// Drops what the route's device holds (the app jumped in its source); delivery goes on
    /// with what the app writes next.
    public func flushAudio(on session: MediaOutputSession) throws {
        guard let record = audioDeliveries[session.id], record.delivery.statistics.active else {
            throw MediaDeviceError(.deviceNotActive, "no real-time audio is playing on \(session)")
        }
        flush(record, session)
    }

    /// Whether the route's real-time audio is paused; nil when none is acquired.
    public func isAudioPaused(on session: MediaOutputSession) -> Bool? {
        guard let record = audioDeliveries[session.id], record.delivery.statistics.active else { return nil }
        return record.delivery.isPaused
    }

    /// The flush goes through the same queue as the samples, after those already queued.
    private func flush(_ record: AudioDeliveryRecord, _ session: MediaOutputSession) {
        if case .enqueued = record.buffers.yield(.flush) { return }
        // The queue is full (the extension is stuck): the flush goes straight to it.
        guard let route = routes(session), let handler = loadedExtension(for: route.key.protocolID)?.instance as? any RealtimeSampleHandling else {
            return
        }
        Task { await handler.flushRealtimeSamples(session: session) }
    }

    /// Sets what a route's real-time audio is; the extension gets it now and with each new stream.
    public func setRealtimeNowPlaying(_ nowPlaying: RealtimeNowPlaying, on session: MediaOutputSession) async throws {
        guard let route = routes(session), let handler = loadedExtension(for: route.key.protocolID)?.instance as? any RealtimeSampleHandling,
            route.device.capabilities.contains(.realtimeAudioStreaming)
        else {
            throw MediaDeviceError(.unsupported, "the route of \(session) takes no real-time audio")
        }
        realtimeNowPlaying[session.id] = nowPlaying
        if isRealtime(session) { await handler.updateRealtimeNowPlaying(nowPlaying, session: session) }
    }

    /// What real-time audio a route takes; nil when it takes none.
    public func realtimeAudioSupport(on session: MediaOutputSession) async -> RealtimeAudioSupport? {
        guard let route = routes(session), let handler = loadedExtension(for: route.key.protocolID)?.instance as? any RealtimeSampleHandling,
            route.device.capabilities.contains(.realtimeAudioStreaming)
        else { return nil }
        return await handler.realtimeAudioSupport(session: session)
    }

    /// The latency a route adds to audio acquired in `format`: its device's buffer and the
    /// daemon's pacing (what ``acquireAudio(on:format:)`` would report); nil when it takes none.
    public func audioLatency(on session: MediaOutputSession, format: SampleBuffer.Format) async -> Duration? {
        guard let support = await realtimeAudioSupport(on: session) else { return nil }
        return support.latency + PacedAudioDelivery.addedLatency(for: format, configuration: PacedAudioDelivery.Configuration())
    }

    /// How delivery on a route goes; nil when none was acquired since the route started.
    public func audioStatistics(on session: MediaOutputSession) -> RealtimeAudioStatistics? {
        audioDeliveries[session.id]?.delivery.statistics
    }

    /// Ends a route's delivery now: its queue is dropped and the writer's end sees the socket
    /// closed. Its statistics stay readable until the route ends (`forgetting`) or audio is acquired again.
    func endAudioDelivery(_ id: UUID, forgetting: Bool = false) {
        guard let record = forgetting ? audioDeliveries.removeValue(forKey: id) : audioDeliveries[id] else { return }
        record.delivery.stop()
        record.buffers.finish()
        record.feeder.cancel()
    }

    /// The writer ended the stream: once the extension has every buffer, samples stop on the route.
    private func audioDeliveryEnded(_ session: MediaOutputSession, token: UInt64, _ end: PacedAudioDelivery.End) async {
        guard let record = audioDeliveries[session.id], record.token == token else { return }
        await record.feeder.value
        guard audioDeliveries[session.id]?.token == token, let route = routes(session) else { return }
        logger.info("real-time audio ended by its writer", metadata: ["device": "\(route.device.displayName)", "end": "\(end)"])
        if case .readFailed(let code) = end {
            logger.warning("real-time audio read failed", metadata: ["errno": "\(code)"])
        }
        // Statistics stay readable; the extension is told samples stopped (it flushes its encoder).
        await stopHandlerKeepingStatistics(session)
    }
}
