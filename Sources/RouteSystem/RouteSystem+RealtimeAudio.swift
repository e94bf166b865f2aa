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
    let buffers: AsyncStream<SampleBuffer>.Continuation
    let feeder: Task<Void, Never>
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
            of: SampleBuffer.self, bufferingPolicy: .bufferingOldest(Self.queuedBuffersForExtension))
        let delivery: PacedAudioDelivery
        do {
            delivery = try PacedAudioDelivery(
                reading: reader, format: format, routeLatency: support.latency, configuration: configuration,
                deliver: { buffer in
                    if case .enqueued = continuation.yield(buffer) { return true }
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
            for await buffer in buffers { await handler.receiveSamples(buffer, session: session) }
        }
        audioDeliveries[session.id] = AudioDeliveryRecord(token: token, delivery: delivery, buffers: continuation, feeder: feeder)
        logger.info(
            "real-time audio acquired",
            metadata: ["device": "\(route.device.displayName)", "format": "\(format.encoding.pcmName ?? "?")/\(format.sampleRate)/\(format.channels)"])
        return AudioAcquisition(
            descriptor: writer, format: format, latency: support.latency + PacedAudioDelivery.addedLatency(for: format, configuration: configuration))
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
