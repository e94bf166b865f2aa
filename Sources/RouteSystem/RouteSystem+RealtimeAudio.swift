#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
public import MediaDevice
import RealtimeAudio
import Synchronization
import Logging
public import RoutingModel

/// One paced delivery of real-time audio on a route.
struct AudioDeliveryRecord {
    let token: UInt64
    let delivery: PacedAudioDelivery
    let buffers: AsyncStream<AudioDeliveryItem>.Continuation
    let feeder: Task<Void, Never>
    /// The group the route plays in, when the delivery is shared (``RouteSystem/acquireGroupAudio(on:format:)``).
    var group: AudioGroupFanOut? = nil
    /// The route left the group it played in: the delivery goes on for the others, and this
    /// route's record is kept only for its statistics (it can no longer pause the group).
    var leftGroup = false

    /// Whether the route's audio is playing through this record (the delivery is open, and
    /// the route has not left the group that shares it).
    var isPlaying: Bool { delivery.statistics.active && !leftGroup }
}

/// One delivery's buffers handed to every route of a group: each member gets every buffer,
/// after silence for how much less than the slowest member its device buffers, with the
/// buffers' presentation times moved on by that lead; a member whose route ends is let go
/// and the others play on.
final class AudioGroupFanOut: Sendable {
    struct Member {
        let session: MediaOutputSession
        let continuation: AsyncStream<AudioDeliveryItem>.Continuation
        /// Where the member's samples go on the delivering thread, when its device takes them there.
        var sink: (any RealtimeSampleReceiver)? = nil
        /// Frames of silence before the first buffer.
        let leadFrames: Int
        var lead: Duration
        var started = false
        /// A change of lead not yet applied: frames of silence to play first (more than 0), or
        /// frames to leave out of the next buffers (less than 0).
        var pendingShift = 0
    }

    private let members: Mutex<[UUID: Member]>
    /// Set once the writer ended the stream (under `members`' lock): no one joins after that.
    private let finished = Mutex(false)

    init(_ members: [UUID: Member]) {
        self.members = Mutex(members)
    }

    /// Hands `buffer` to every member; false when a member's queue was full (its device is stuck).
    func deliver(_ buffer: SampleBuffer) -> Bool {
        members.withLock { members in
            var allTaken = true
            for id in members.keys {
                var buffer = buffer
                if !members[id]!.started {
                    members[id]!.started = true
                    if let bytesPerFrame = buffer.format.bytesPerFrame, members[id]!.leadFrames > 0 {
                        let silence = SampleBuffer(
                            format: buffer.format, presentationTime: buffer.presentationTime, frameCount: members[id]!.leadFrames,
                            data: [UInt8](repeating: 0, count: members[id]!.leadFrames * bytesPerFrame))
                        _ = members[id]!.hand(silence)
                    }
                }
                if members[id]!.pendingShift != 0, let bytesPerFrame = buffer.format.bytesPerFrame {
                    let pacing = DeliveryPacing(sampleRate: buffer.format.sampleRate, maxBurst: 1)
                    let shift = members[id]!.pendingShift
                    if shift > 0 {
                        // Later by `shift` frames: silence first, ending where this buffer now plays.
                        let silence = SampleBuffer(
                            format: buffer.format, presentationTime: buffer.presentationTime + members[id]!.lead - pacing.duration(ofFrames: Int64(shift)),
                            frameCount: shift, data: [UInt8](repeating: 0, count: shift * bytesPerFrame))
                        _ = members[id]!.hand(silence)
                        members[id]!.pendingShift = 0
                    } else {
                        // Earlier: frames left out until the member has caught up.
                        let skipped = min(-shift, buffer.frameCount)
                        members[id]!.pendingShift += skipped
                        guard skipped < buffer.frameCount else { continue }
                        buffer = SampleBuffer(
                            format: buffer.format, presentationTime: buffer.presentationTime + pacing.duration(ofFrames: Int64(skipped)),
                            frameCount: buffer.frameCount - skipped, data: Array(buffer.data[(skipped * bytesPerFrame)...]))
                    }
                }
                buffer.presentationTime += members[id]!.lead
                if !members[id]!.hand(buffer) { allTaken = false }
            }
            return allTaken
        }
    }

    /// Moves a member's lead to `lead` from the next buffer on (its device reported another
    /// latency): silence for a longer lead, frames left out for a shorter one. Returns the lead
    /// before; nil for no such member.
    func setLead(_ id: UUID, to lead: Duration, sampleRate: Int) -> Duration? {
        members.withLock { members in
            guard let member = members[id] else { return nil }
            let pacing = DeliveryPacing(sampleRate: sampleRate, maxBurst: 1)
            let frames = { (duration: Duration) in Int(min(pacing.clockFrames(after: duration), Int64(sampleRate) * 10)) }
            // Until the member started, its lead is the silence it starts with (fixed), so a change waits for the start too.
            members[id]!.pendingShift += frames(max(.zero, lead)) - frames(max(.zero, member.lead))
            members[id]!.lead = lead
            return member.lead
        }
    }

    /// Each member's lead now, by session.
    var leads: [MediaOutputSession: Duration] {
        members.withLock { Dictionary(uniqueKeysWithValues: $0.values.map { ($0.session, $0.lead) }) }
    }

    /// Takes a member in: it gets every buffer from the next one on (after its lead's silence).
    /// False when the group has ended (no member left to play with).
    func add(_ id: UUID, _ member: Member) -> Bool {
        members.withLock { members in
            guard !members.isEmpty, !finished.withLock({ $0 }) else { return false }
            members[id] = member
            return true
        }
    }

    /// Lets a member go; true when none is left.
    func remove(_ id: UUID) -> Bool {
        members.withLock { members in
            members.removeValue(forKey: id)?.continuation.finish()
            return members.isEmpty
        }
    }

    /// The writer ended the stream: every member's queue ends after what it holds.
    func finishAll() {
        members.withLock { members in
            finished.withLock { $0 = true }
            for member in members.values { member.continuation.finish() }
        }
    }

    /// A flush to every member, after what each has queued.
    func flushAll() {
        members.withLock { members in
            for member in members.values { member.continuation.yield(.flush) }
        }
    }

    var memberSessions: [MediaOutputSession] { members.withLock { $0.values.map(\.session) } }
}

/// What goes to the extension, in order: samples, and flushes between them.
enum AudioDeliveryItem: Sendable {
    case samples(SampleBuffer)
    case flush
}

extension AudioGroupFanOut.Member {
    /// Hands a buffer to the member's device: to its sink at once, else to its queue.
    func hand(_ buffer: SampleBuffer) -> Bool {
        RouteSystem.hand(buffer, to: sink, or: continuation)
    }
}

extension RouteSystem {
    /// How far the extension may fall behind before buffers are dropped rather than queued
    /// (25 ticks: half a second): a stuck device costs the daemon this much memory and no more.
    static let queuedBuffersForExtension = 25

    /// The route's extension as a sample handler (told samples start), and what it takes.
    /// - Throws: ``MediaDeviceError`` `unsupported` naming what the route takes, when not `format`.
    private func realtimeHandler(
        on session: MediaOutputSession, taking format: SampleBuffer.Format
    ) async throws -> (any RealtimeSampleHandling, ActiveRoute, RealtimeAudioSupport) {
        let (handler, route) = try await startRealtimeHandler(on: session)
        let support = await ordered(handler) { await $0.realtimeAudioSupport(session: session) }
        guard format.bytesPerFrame != nil, support.accepts(format) else {
            throw MediaDeviceError(
                .unsupported,
                "\(route.device.displayName) takes \(support), not \(format.encoding.pcmName ?? "encoded frames") at \(format.sampleRate) Hz with \(format.channels) channels")
        }
        return (handler, route, support)
    }

    /// Opens paced real-time delivery of `format` on a route; see ``SystemRoutingBackend/acquireAudio(on:format:)``.
    ///
    /// The descriptor returned is the write end of a Unix stream socket with the smallest
    /// send buffer; the read end is read by a ``PacedAudioDelivery`` at the device's rate
    /// and its buffers go to the extension in order, through a queue of
    /// ``queuedBuffersForExtension`` buffers.
    public func acquireAudio(on session: MediaOutputSession, format: SampleBuffer.Format) async throws -> AudioAcquisition {
        let (handler, route, support) = try await realtimeHandler(on: session, taking: format)
        guard isRealtime(session) else { throw MediaDeviceError(.deviceNotActive, "\(session) is not active") }
        endAudioDelivery(session.id)

        let configuration = Self.deliveryConfiguration(for: [support])
        let (reader, writer) = try PacedAudioDelivery.socketPair(sendBuffer: PacedAudioDelivery.sendBufferBytes(for: format, configuration: configuration))

        nextAudioDelivery += 1
        let token = nextAudioDelivery
        let (buffers, continuation) = AsyncStream.makeStream(
            of: AudioDeliveryItem.self, bufferingPolicy: .bufferingOldest(Self.queuedBuffersForExtension))
        let sink = await ordered(handler) { await $0.realtimeSampleReceiver(session: session) }
        let delivery: PacedAudioDelivery
        do {
            delivery = try PacedAudioDelivery(
                reading: reader, format: format, routeLatency: support.latency + Self.batchDelay(configuration), configuration: configuration,
                deliver: { buffer in Self.hand(buffer, to: sink, or: continuation) },
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
        let feeder = Self.feed(buffers, to: handler, session: session)
        audioDeliveries[session.id] = AudioDeliveryRecord(token: token, delivery: delivery, buffers: continuation, feeder: feeder)
        if let nowPlaying = realtimeNowPlaying[session.id] { await ordered(handler) { await $0.updateRealtimeNowPlaying(nowPlaying, session: session) } }
        await ordered(handler) { await $0.prepareRealtimeSamples(format, session: session) }
        logger.info(
            "real-time audio acquired",
            metadata: ["device": "\(route.device.displayName)", "format": "\(format.encoding.pcmName ?? "?")/\(format.sampleRate)/\(format.channels)"])
        return AudioAcquisition(
            descriptor: writer, format: format,
            latency: support.latency + Self.batchDelay(configuration) + PacedAudioDelivery.addedLatency(for: format, configuration: configuration))
    }

    /// Pauses a route's real-time audio: the device's clock stops, the writer blocks once its
    /// socket fills, and the device drops what it holds (``RealtimeSampleHandling/flushRealtimeSamples(session:)``)
    /// so the pause is heard now, not after the device's buffer.
    /// - Throws: deviceNotActive when no real-time audio was acquired on the route.
    public func pauseAudio(on session: MediaOutputSession) throws {
        guard let record = audioDeliveries[session.id], record.isPlaying else {
            throw MediaDeviceError(.deviceNotActive, "no real-time audio is playing on \(session)")
        }
        guard !record.delivery.isPaused else { return }
        record.delivery.pause()
        flush(record, session)
    }

    /// Resumes a route's real-time audio after ``pauseAudio(on:)``, at once.
    public func resumeAudio(on session: MediaOutputSession) throws {
        guard let record = audioDeliveries[session.id], record.isPlaying else {
            throw MediaDeviceError(.deviceNotActive, "no real-time audio is playing on \(session)")
        }
        record.delivery.resume()
    }

    /// Drops what the route's device holds (the app jumped in its source); delivery goes on
    /// with what the app writes next.
    public func flushAudio(on session: MediaOutputSession) throws {
        guard let record = audioDeliveries[session.id], record.isPlaying else {
            throw MediaDeviceError(.deviceNotActive, "no real-time audio is playing on \(session)")
        }
        flush(record, session)
    }

    /// Whether the route's real-time audio is paused; nil when none is acquired.
    public func isAudioPaused(on session: MediaOutputSession) -> Bool? {
        guard let record = audioDeliveries[session.id], record.isPlaying else { return nil }
        return record.delivery.isPaused
    }

    /// The flush goes through the same queue as the samples, after those already queued (to
    /// every member of a group: they share the delivery that paused).
    private func flush(_ record: AudioDeliveryRecord, _ session: MediaOutputSession) {
        if let group = record.group {
            group.flushAll()
            return
        }
        if case .enqueued = record.buffers.yield(.flush) { return }
        // The queue is full (the extension is stuck): the flush goes straight to it.
        guard let route = routes(session), let handler = loadedExtension(for: route.key.protocolID)?.instance as? any RealtimeSampleHandling else {
            return
        }
        Task { await ordered(handler) { await $0.flushRealtimeSamples(session: session) } }
    }

    /// Sets what a route's real-time audio is; the extension gets it now and with each new stream.
    public func setRealtimeNowPlaying(_ nowPlaying: RealtimeNowPlaying, on session: MediaOutputSession) async throws {
        guard let route = routes(session), let handler = loadedExtension(for: route.key.protocolID)?.instance as? any RealtimeSampleHandling,
            route.device.capabilities.contains(.realtimeAudioStreaming)
        else {
            throw MediaDeviceError(.unsupported, "the route of \(session) takes no real-time audio")
        }
        realtimeNowPlaying[session.id] = nowPlaying
        if isRealtime(session) { await ordered(handler) { await $0.updateRealtimeNowPlaying(nowPlaying, session: session) } }
    }

    /// Hands a delivery's items to the route's extension, in order, one at a time.
    /// Hands a buffer to a route's device on the delivering thread: to its sink when it has one
    /// (no hop to the extension's actor), else to the queue its feeder task reads.
    static func hand(
        _ buffer: SampleBuffer, to sink: (any RealtimeSampleReceiver)?, or queue: AsyncStream<AudioDeliveryItem>.Continuation
    ) -> Bool {
        if let sink { return sink.receive(buffer) }
        if case .enqueued = queue.yield(.samples(buffer)) { return true }
        return false
    }

    static func feed(
        _ items: AsyncStream<AudioDeliveryItem>, to handler: any RealtimeSampleHandling, session: MediaOutputSession
    ) -> Task<Void, Never> {
        Task {
            for await item in items {
                switch item {
                case .samples(let buffer): await handler.receiveSamples(buffer, session: session)
                case .flush: await handler.flushRealtimeSamples(session: session)
                }
            }
        }
    }

    /// What real-time audio a route takes; nil when it takes none.
    public func realtimeAudioSupport(on session: MediaOutputSession) async -> RealtimeAudioSupport? {
        guard let route = routes(session), let handler = loadedExtension(for: route.key.protocolID)?.instance as? any RealtimeSampleHandling,
            route.device.capabilities.contains(.realtimeAudioStreaming)
        else { return nil }
        return await ordered(handler) { await $0.realtimeAudioSupport(session: session) }
    }

    /// The latency a route adds to audio acquired in `format`: its device's buffer and the
    /// daemon's pacing (what ``acquireAudio(on:format:)`` would report); nil when it takes none.
    public func audioLatency(on session: MediaOutputSession, format: SampleBuffer.Format) async -> Duration? {
        guard let support = await realtimeAudioSupport(on: session) else { return nil }
        let configuration = Self.deliveryConfiguration(for: [support])
        return support.latency + Self.batchDelay(configuration) + PacedAudioDelivery.addedLatency(for: format, configuration: configuration)
    }

    /// Delivery's timing for routes that take samples together: batched at the shortest period
    /// any of them asks for, when every one asks for one; else the default (an AirPlay member,
    /// or a Bluetooth one on LDAC, takes samples every 20 ms).
    static func deliveryConfiguration(for supports: [RealtimeAudioSupport]) -> PacedAudioDelivery.Configuration {
        let periods = supports.map(\.deliveryPeriod)
        guard !periods.isEmpty, !periods.contains(nil), let shortest = periods.compactMap({ $0 }).min() else {
            return PacedAudioDelivery.Configuration()
        }
        return .batched(period: shortest)
    }

    /// How much later than at delivery's default period a batched delivery's devices play a
    /// sample: they play what they fetch as it comes (a URL device's live stream), and a
    /// batch's first sample comes a longer period after its presentation time. Their
    /// calibrated latencies were measured at the default period; devices that play by
    /// presentation time (AirPlay) never run batched.
    static func batchDelay(_ configuration: PacedAudioDelivery.Configuration) -> Duration {
        configuration.readsOnTicks ? max(.zero, configuration.period - PacedAudioDelivery.Configuration().period) : .zero
    }

    /// How delivery on a route goes; nil when none was acquired since the route started.
    public func audioStatistics(on session: MediaOutputSession) -> RealtimeAudioStatistics? {
        guard let record = audioDeliveries[session.id] else { return nil }
        var statistics = record.delivery.statistics
        if !record.leftGroup, let lead = record.group?.leads[session] {
            statistics.groupLeadMicroseconds = UInt64(max(0, lead / .microseconds(1)))
        }
        return statistics
    }

    /// Ends a route's delivery now: its queue is dropped and the writer's end sees the socket
    /// closed. Its statistics stay readable until the route ends (`forgetting`) or audio is acquired again.
    func endAudioDelivery(_ id: UUID, forgetting: Bool = false) {
        guard let record = forgetting ? audioDeliveries.removeValue(forKey: id) : audioDeliveries[id] else { return }
        // The route left its group earlier: the delivery is the others' still.
        if record.leftGroup { return }
        if let group = record.group {
            // A member leaving a group: the others play on; the last one stops the delivery.
            if !forgetting {
                audioDeliveries[id]?.group = nil
                audioDeliveries[id]?.leftGroup = true
            }
            if group.remove(id) { record.delivery.stop() }
        } else {
            record.delivery.stop()
            record.buffers.finish()
        }
        record.feeder.cancel()
        if forgetting {
            let statistics = record.delivery.statistics
            logger.info("real-time audio stopped", metadata: [
                "frames": "\(statistics.framesDelivered)", "underruns": "\(statistics.underruns)", "dropped": "\(statistics.framesDropped)",
            ])
        }
    }

    /// Opens one paced delivery of `format` for several routes that play as a group: one
    /// socket and one clock, every buffer to every member. Each member gets silence first for
    /// how much less than the slowest it buffers, so a sample comes out of every device at the
    /// same time; devices that schedule playback themselves (AirPlay) get the same presentation
    /// times and play on one timeline. A member whose route ends leaves the group; the others
    /// play on. Any delivery the routes had ends.
    /// - Returns: the acquisition (its latency is the slowest member's) and each member's lead.
    public func acquireGroupAudio(
        on sessions: [MediaOutputSession], format: SampleBuffer.Format
    ) async throws -> (acquisition: AudioAcquisition, leads: [Duration]) {
        guard !sessions.isEmpty, Set(sessions.map(\.id)).count == sessions.count else {
            throw MediaDeviceError(.invalidArgument, "a group needs routes, each once")
        }
        var handlers: [(any RealtimeSampleHandling, ActiveRoute)] = []
        var latencies: [Duration] = []
        var supports: [RealtimeAudioSupport] = []
        for session in sessions {
            let (handler, route, support) = try await realtimeHandler(on: session, taking: format)
            handlers.append((handler, route))
            supports.append(support)
            // A device set to play later counts as buffering less (it is led in by more), and
            // one set to play earlier as buffering more.
            latencies.append(support.latency - groupOffset(of: route))
        }
        for session in sessions {
            guard isRealtime(session) else { throw MediaDeviceError(.deviceNotActive, "\(session) is not active") }
            endAudioDelivery(session.id)
        }
        let slowest = latencies.max() ?? .zero
        let leads = latencies.map { slowest - $0 }
        let pacing = DeliveryPacing(sampleRate: format.sampleRate, maxBurst: 1)

        var members: [UUID: AudioGroupFanOut.Member] = [:]
        var streams: [UUID: AsyncStream<AudioDeliveryItem>] = [:]
        for (index, session) in sessions.enumerated() {
            let (stream, continuation) = AsyncStream.makeStream(
                of: AudioDeliveryItem.self, bufferingPolicy: .bufferingOldest(Self.queuedBuffersForExtension))
            let leadFrames = Int(max(0, min(pacing.clockFrames(after: leads[index]), Int64(format.sampleRate) * 10)))
            let sink = await ordered(handlers[index].0) { await $0.realtimeSampleReceiver(session: session) }
            members[session.id] = AudioGroupFanOut.Member(
                session: session, continuation: continuation, sink: sink, leadFrames: leadFrames, lead: leads[index])
            streams[session.id] = stream
        }
        let group = AudioGroupFanOut(members)
        let configuration = Self.deliveryConfiguration(for: supports)
        let (reader, writer) = try PacedAudioDelivery.socketPair(sendBuffer: PacedAudioDelivery.sendBufferBytes(for: format, configuration: configuration))
        nextAudioDelivery += 1
        let token = nextAudioDelivery
        let delivery: PacedAudioDelivery
        do {
            delivery = try PacedAudioDelivery(
                reading: reader, format: format, routeLatency: slowest + Self.batchDelay(configuration), configuration: configuration,
                deliver: { buffer in group.deliver(buffer) },
                ended: { [weak self] end in
                    let members = group.memberSessions
                    group.finishAll()
                    Task {
                        for session in members { await self?.audioDeliveryEnded(session, token: token, end) }
                    }
                })
            try delivery.start()
        } catch {
            close(reader)
            close(writer)
            group.finishAll()
            throw MediaDeviceError(.sessionFailed, "real-time audio not started: \(error)")
        }
        for (index, session) in sessions.enumerated() {
            let handler = handlers[index].0
            let stream = streams[session.id]!
            let feeder = Self.feed(stream, to: handler, session: session)
            audioDeliveries[session.id] = AudioDeliveryRecord(
                token: token, delivery: delivery, buffers: members[session.id]!.continuation, feeder: feeder, group: group)
            if let nowPlaying = realtimeNowPlaying[session.id] { await ordered(handler) { await $0.updateRealtimeNowPlaying(nowPlaying, session: session) } }
            // Members are not prepared: the group's first sound waits for its slowest member's
            // latency anyway, and a URL device that fetches once the group's samples are dated
            // starts at the one due (prepared, it played whatever came first as it came: 30 ms
            // further off the group with both cores busy).
        }
        logger.info(
            "real-time group audio acquired",
            metadata: [
                "devices": "\(handlers.map(\.1.device.displayName))", "leads": "\(leads)",
                "format": "\(format.encoding.pcmName ?? "?")/\(format.sampleRate)/\(format.channels)",
            ])
        let acquisition = AudioAcquisition(
            descriptor: writer, format: format,
            latency: slowest + Self.batchDelay(configuration) + PacedAudioDelivery.addedLatency(for: format, configuration: configuration))
        return (acquisition, leads)
    }

    /// Takes a route into the group `member` plays in (a device that left and came back, or
    /// one more room), in sync: it gets every buffer from the next one on, with the group's
    /// presentation times, after silence for how much less than the group it buffers. Any
    /// delivery the route had ends; the writer of the group's delivery does not notice.
    /// - Returns: the route's lead (how much later than the slowest member it starts).
    /// - Throws: ``MediaDeviceError`` `deviceNotActive` when `member` plays in no group;
    ///   `unsupported` when the route does not take the group's format, or buffers more than the
    ///   group (it would play late by the difference).
    public func joinGroupAudio(on session: MediaOutputSession, joining member: MediaOutputSession) async throws -> Duration {
        guard session.id != member.id else { throw MediaDeviceError(.invalidArgument, "a route cannot join its own group") }
        guard let groupRecord = audioDeliveries[member.id], groupRecord.isPlaying, let group = groupRecord.group else {
            throw MediaDeviceError(.deviceNotActive, "\(member) plays in no group")
        }
        let delivery = groupRecord.delivery
        let (handler, route, support) = try await realtimeHandler(on: session, taking: delivery.format)
        guard isRealtime(session) else { throw MediaDeviceError(.deviceNotActive, "\(session) is not active") }
        let slowest = delivery.routeLatency
        // A device that plays what it fetches as it comes gets the group's batches late as the others do.
        let latency = support.latency + (support.deliveryPeriod == nil ? .zero : Self.batchDelay(delivery.configuration)) - groupOffset(of: route)
        guard latency <= slowest else {
            throw MediaDeviceError(
                .unsupported,
                "\(route.device.displayName) buffers \(latency), more than the group's \(slowest): it would play late")
        }
        endAudioDelivery(session.id)
        let lead = slowest - latency
        let pacing = DeliveryPacing(sampleRate: delivery.format.sampleRate, maxBurst: 1)
        let leadFrames = Int(max(0, min(pacing.clockFrames(after: lead), Int64(delivery.format.sampleRate) * 10)))
        let (stream, continuation) = AsyncStream.makeStream(
            of: AudioDeliveryItem.self, bufferingPolicy: .bufferingOldest(Self.queuedBuffersForExtension))
        let sink = await ordered(handler) { await $0.realtimeSampleReceiver(session: session) }
        guard group.add(session.id, AudioGroupFanOut.Member(session: session, continuation: continuation, sink: sink, leadFrames: leadFrames, lead: lead)) else {
            continuation.finish()
            throw MediaDeviceError(.deviceNotActive, "the group of \(member) has ended")
        }
        let feeder = Self.feed(stream, to: handler, session: session)
        audioDeliveries[session.id] = AudioDeliveryRecord(
            token: groupRecord.token, delivery: delivery, buffers: continuation, feeder: feeder, group: group)
        if let nowPlaying = realtimeNowPlaying[session.id] { await ordered(handler) { await $0.updateRealtimeNowPlaying(nowPlaying, session: session) } }
        logger.info("joined a real-time audio group", metadata: ["device": "\(route.device.displayName)", "lead": "\(lead)"])
        return lead
    }

    /// A group member's device reported another latency (an A2DP speaker's delay report): its
    /// lead moves so the group's samples still come out of every device at once. The group's
    /// latency (the writer was told it) stays; a member that now buffers more than it cannot
    /// be led in and plays late by the difference, which is reported, not left silent.
    func realignGroupMember(_ session: MediaOutputSession) async {
        guard let record = audioDeliveries[session.id], record.isPlaying, let group = record.group, let route = routes(session),
            let support = await realtimeAudioSupport(on: session),
            audioDeliveries[session.id]?.token == record.token
        else { return }
        let delivery = record.delivery
        let latency = support.latency + (support.deliveryPeriod == nil ? .zero : Self.batchDelay(delivery.configuration)) - groupOffset(of: route)
        let lead = delivery.routeLatency - latency
        guard let before = group.leads[session], before != max(.zero, lead) else { return }
        _ = group.setLead(session.id, to: max(.zero, lead), sampleRate: delivery.format.sampleRate)
        if lead < .zero {
            let late = Int((.zero - lead) / .milliseconds(1))
            logger.warning("a group member now plays late", metadata: ["device": "\(route.device.displayName)", "late": "\(Duration.zero - lead)"])
            emit(.routeChanged(route, reason: "plays \(late) ms after the group: its device now buffers more than the group's slowest"))
        } else {
            logger.info("group member realigned", metadata: ["device": "\(route.device.displayName)", "from": "\(before)", "to": "\(lead)"])
            emit(.routeChanged(route, reason: "led into the group by \(Int(lead / .milliseconds(1))) ms (was \(Int(before / .milliseconds(1))))"))
        }
    }

    /// Each member's lead in the real-time group `session` plays in (how much later than the
    /// slowest it starts); nil when it plays in none.
    public func groupAudioLeads(on session: MediaOutputSession) -> [MediaOutputSession: Duration]? {
        guard let record = audioDeliveries[session.id], record.isPlaying, let group = record.group else { return nil }
        return group.leads
    }

    /// How much later than its latency says the route's device plays in a group (configured).
    private func groupOffset(of route: ActiveRoute) -> Duration {
        configuration.groupOffsets[route.device.displayName] ?? .zero
    }

    /// The writer ended the stream: once the extension has every buffer, samples stop on the route.
    private func audioDeliveryEnded(_ session: MediaOutputSession, token: UInt64, _ end: PacedAudioDelivery.End) async {
        guard let record = audioDeliveries[session.id], record.token == token else { return }
        await record.feeder.value
        guard audioDeliveries[session.id]?.token == token, let route = routes(session) else { return }
        var metadata: Logger.Metadata = ["device": "\(route.device.displayName)", "end": "\(end)"]
        if let statistics = audioStatistics(on: session) {
            metadata["frames"] = "\(statistics.framesDelivered)"
            metadata["underruns"] = "\(statistics.underruns)"
            metadata["dropped"] = "\(statistics.framesDropped)"
        }
        logger.info("real-time audio ended by its writer", metadata: metadata)
        if case .readFailed(let code) = end {
            logger.warning("real-time audio read failed", metadata: ["errno": "\(code)"])
        }
        // Statistics stay readable; the extension is told samples stopped (it flushes its encoder).
        await stopHandlerKeepingStatistics(session)
        if let statistics = audioStatistics(on: session), let route = routes(session) { emit(.audioEnded(route, statistics: statistics)) }
    }
}
