#if canImport(Glibc)
import Glibc
#endif
public import IOReactor
import Logging
public import MediaDevice
public import RoutingModel
import Synchronization

/// Reads an app's PCM from a stream socket and hands it to a device at the device's pace.
///
/// Bytes are read as soon as they come into a small buffer (``Configuration/buffered``
/// of audio), so the socket stays nearly empty and a writer never waits on a half-read
/// socket. The reactor wakes delivery once per ``Configuration/period`` while it runs;
/// each tick hands the device exactly the frames its clock consumed since the last one.
/// A writer faster than the device finds the buffer and then the socket full and waits;
/// one slower than it gets silence for the frames it missed (an underrun, counted); a
/// device that cannot take a buffer in time has it dropped (counted) instead of holding
/// the daemon up. Writes may end anywhere, even inside a sample: only whole frames are
/// handed over. Closing the writer's end is the end of the stream: what it wrote plays
/// out first.
public final class PacedAudioDelivery: Sendable {
    /// Timing of delivery.
    public struct Configuration: Sendable, Hashable {
        /// The interval of the device's clock ticks; each hands over this much audio. 20 ms:
        /// half the wake-ups of 10 ms for 0.8 % of a core per SBC stream, near PipeWire's
        /// default quantum (1024 frames at 48 kHz).
        public var period: Duration = .milliseconds(20)
        /// Audio read ahead of the device beyond one period: a tick that fires late takes a
        /// little more than a period, and the writer's socket queue covers a writer that
        /// wakes late.
        public var buffered: Duration = .milliseconds(10)
        /// The most periods one tick makes up for when the process fell behind.
        public var maxBurstPeriods = 4
        /// Once the clock runs, read only on ticks, not as bytes come: one wake-up per period
        /// for the writer's socket and the device's clock together. The writer's socket then
        /// holds a period and what is read ahead (``sendBufferBytes(for:)``), so the writer
        /// runs that much further ahead. For devices that buffer a stream they fetch (URL
        /// devices' live streams), with a longer period (see ``batched(period:)``).
        public var readsOnTicks = false

        public init() {}

        /// Delivery for a device that buffers what it fetches: a tick every `period`, reading
        /// on ticks only (`period` at least the default).
        public static func batched(period: Duration) -> Configuration {
            var configuration = Configuration()
            configuration.period = max(configuration.period, min(period, .milliseconds(200)))
            configuration.readsOnTicks = configuration.period > Configuration().period
            return configuration
        }
    }

    /// Why delivery ended by itself.
    public enum End: Sendable, Hashable {
        /// The writer closed its end, and everything it wrote was handed over.
        case writerClosed
        /// Reading failed (the errno).
        case readFailed(Int32)
    }

    private struct State {
        var pacing: DeliveryPacing
        var buffer: [UInt8] = []
        /// When the writer's first bytes came; the clock starts once the buffer is full, or a
        /// period after them (see ``readable(_:)``).
        var firstBytes: ContinuousClock.Instant?
        var started: ContinuousClock.Instant?
        var watch: IOWatch?
        /// What the watch is set to wait for: changed only when it differs (each change is a system call).
        var interest: IOEvents = .readable
        /// The writer hung up while the buffer was full: ticks read the rest themselves.
        var readsOnTicks = false
        var writerEnd: End?
        var timer: IOTimer?
        var finished = false
        var bytesReceived: UInt64 = 0
        var statistics: RealtimeAudioStatistics
        /// Held by ``pause()``: no clock, no ticks; reading stops once the buffer is full.
        var paused = false
        /// The monotonic clock (CLOCK_MONOTONIC) when the device's clock last started.
        var clockStartedAt: Duration = .zero

        mutating func setInterest(_ events: IOEvents) {
            guard let watch, events != interest else { return }
            interest = events
            watch.setInterest(events)
        }
    }

    private let descriptor: Int32
    /// What the writer writes.
    public let format: SampleBuffer.Format
    private let bytesPerFrame: Int
    private let capacity: Int
    /// A period of audio in bytes: what a tick hands over.
    private let periodBytes: Int
    /// How much the device (the slowest of a group's) buffers, as given.
    public let routeLatency: Duration
    private let reactor: any IOScheduler
    /// The timing it runs with.
    public let configuration: Configuration
    private let framesPerPeriod: Int
    private let deliver: @Sendable (SampleBuffer) -> Bool
    private let ended: @Sendable (End) -> Void
    private let state: Mutex<State>

    /// Delivery of `format` read from `descriptor` (a non-blocking stream socket this object
    /// now owns and closes). `deliver` hands a buffer to the device and returns false when the
    /// device could not take it; `ended` is called once if the writer ends the stream.
    /// Both are called on the reactor thread and must not block.
    public init(
        reading descriptor: Int32, format: SampleBuffer.Format, routeLatency: Duration, reactor: any IOScheduler = IOReactor.shared,
        configuration: Configuration = Configuration(),
        deliver: @escaping @Sendable (SampleBuffer) -> Bool, ended: @escaping @Sendable (End) -> Void
    ) throws(MediaDeviceError) {
        guard let bytesPerFrame = format.bytesPerFrame, format.sampleRate > 0, format.sampleRate <= 384_000 else {
            throw MediaDeviceError(.invalidArgument, "not a PCM format: \(format)")
        }
        self.descriptor = descriptor
        self.format = format
        self.bytesPerFrame = bytesPerFrame
        self.routeLatency = routeLatency
        self.reactor = reactor
        self.configuration = configuration
        let clock = DeliveryPacing(sampleRate: format.sampleRate, maxBurst: 1)
        self.framesPerPeriod = Int(max(1, min(clock.clockFrames(after: configuration.period), 1 << 20)))
        let bufferedFrames = Int(max(0, min(clock.clockFrames(after: configuration.buffered), 1 << 20)))
        self.capacity = (bufferedFrames + framesPerPeriod) * bytesPerFrame
        self.periodBytes = framesPerPeriod * bytesPerFrame
        self.deliver = deliver
        self.ended = ended
        self.state = Mutex(State(
            pacing: DeliveryPacing(sampleRate: format.sampleRate, maxBurst: framesPerPeriod * max(1, configuration.maxBurstPeriods)),
            statistics: RealtimeAudioStatistics(format: format, active: true)))
    }

    /// The smallest send buffer a socket takes: the writer's queue beyond what delivery reads ahead.
    public static let sendBufferBytes: Int32 = 4096

    /// The send buffer to ask for on the writer's end for delivery of `format` with
    /// `configuration`: the smallest a socket takes, or, when reading only on ticks, half of a
    /// period and what is read ahead — Linux doubles what is asked for (room for its own
    /// bookkeeping), and a Unix socket then queues about the doubled size: asking for 19 404
    /// bytes queued 32 768, 186 ms of CD audio instead of 110.
    public static func sendBufferBytes(for format: SampleBuffer.Format, configuration: Configuration) -> Int32 {
        guard configuration.readsOnTicks, let bytesPerFrame = format.bytesPerFrame else { return sendBufferBytes }
        let clock = DeliveryPacing(sampleRate: format.sampleRate, maxBurst: 1)
        let frames = clock.clockFrames(after: configuration.period + configuration.buffered)
        return Int32(clamping: max(Int64(sendBufferBytes), min(frames, 1 << 20) * Int64(bytesPerFrame) / 2))
    }

    /// The two ends of one stream: `reader` (non-blocking, for a delivery) and `writer` (blocking,
    /// a send buffer of `sendBuffer` bytes), a Unix stream socket pair each end one way only.
    public static func socketPair(sendBuffer: Int32 = sendBufferBytes) throws(MediaDeviceError) -> (reader: Int32, writer: Int32) {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw MediaDeviceError(.sessionFailed, "no socket for real-time audio (errno \(errno))")
        }
        let (reader, writer) = (ends[0], ends[1])
        var size = sendBuffer
        _ = setsockopt(writer, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        _ = shutdown(reader, Int32(SHUT_WR))
        _ = shutdown(writer, Int32(SHUT_RD))
        _ = fcntl(reader, F_SETFL, fcntl(reader, F_GETFL) | O_NONBLOCK)
        return (reader, writer)
    }

    /// The most a write waits before the device's clock takes it: one tick, what is read
    /// ahead, and what the writer's socket queues (``sendBufferBytes(for:configuration:)``).
    public static func addedLatency(for format: SampleBuffer.Format, configuration: Configuration) -> Duration {
        let clock = DeliveryPacing(sampleRate: format.sampleRate, maxBurst: 1)
        // Batched: the socket queues about twice what was asked for (see sendBufferBytes(for:configuration:)),
        // and what it queues is read on the tick itself: a full buffer and a full socket ahead at most
        // (measured to gmediarender at 100 ms: 41–200 ms from a write to the sound, 100 of them the batch's).
        guard !configuration.readsOnTicks else {
            let queued = Int64(sendBufferBytes(for: format, configuration: configuration)) * 2
            return configuration.period + configuration.buffered + clock.duration(ofFrames: queued / Int64(max(1, format.bytesPerFrame ?? 4)))
        }
        return configuration.period * 2 + configuration.buffered
            + clock.duration(ofFrames: Int64(sendBufferBytes(for: format, configuration: configuration)) / Int64(max(1, format.bytesPerFrame ?? 4)))
    }

    /// Waits for the writer's first bytes, then runs the device's clock.
    public func start() throws(IOReactorError) {
        let watch = try reactor.watch(descriptor, for: .readable) { [weak self] events in self?.readable(events) }
        state.withLock { $0.watch = watch }
    }

    /// Ends delivery now (what is buffered is dropped) and closes the descriptor; `ended` is not called.
    public func stop() {
        let (watch, timer, wasFinished) = state.withLock { state in
            defer { state.finished = true; state.watch = nil; state.timer = nil; state.statistics.active = false; state.buffer = [] }
            return (state.watch, state.timer, state.finished)
        }
        guard !wasFinished else { return }
        timer?.cancel()
        let descriptor = self.descriptor
        if let watch {
            watch.cancel { close(descriptor) }
        } else {
            reactor.execute { close(descriptor) }
        }
    }

    /// Holds delivery: the device's clock stops, what is buffered waits, and reading stops
    /// once the buffer is full, so a writer blocks on its socket instead of losing audio.
    /// Nothing happens when delivery ended or is already paused.
    public func pause() {
        let timer = state.withLock { state -> IOTimer? in
            guard !state.finished, !state.paused else { return nil }
            state.paused = true
            if state.started != nil {
                state.pacing = DeliveryPacing(sampleRate: format.sampleRate, maxBurst: framesPerPeriod * max(1, configuration.maxBurstPeriods))
            }
            state.started = nil
            state.firstBytes = nil
            if state.buffer.count >= capacity { state.setInterest([]) }
            defer { state.timer = nil }
            return state.timer
        }
        timer?.cancel()
    }

    /// Runs the device's clock again after ``pause()``, as at the start: once the buffer is
    /// full or a period after this call, whichever comes first.
    public func resume() {
        let startNow = state.withLock { state -> Bool in
            guard !state.finished, state.paused else { return false }
            state.paused = false
            if state.buffer.count >= capacity || state.writerEnd != nil || state.watch == nil {
                state.started = reactor.now
                state.clockStartedAt = reactor.monotonicNow
                return true
            }
            state.setInterest(.readable)
            let now = reactor.now
            state.firstBytes = now
            state.timer = reactor.schedule(at: now + configuration.period) { [weak self] in self?.startClock() }
            return false
        }
        if startNow { tick() }
    }

    /// Whether delivery is held by ``pause()``.
    public var isPaused: Bool { state.withLock { $0.paused } }

    /// How delivery goes, latency included.
    public var statistics: RealtimeAudioStatistics {
        let (snapshot, buffered) = state.withLock { ($0.statistics, $0.buffer.count) }
        var statistics = snapshot
        var queued: Int32 = 0
        if !statistics.active || ioctl(descriptor, UInt(FIONREAD), &queued) != 0 { queued = 0 }
        let frames = (Int64(queued) + Int64(buffered)) / Int64(bytesPerFrame)
        let own = routeLatency + configuration.period + DeliveryPacing(sampleRate: format.sampleRate, maxBurst: 1).duration(ofFrames: frames)
        let (seconds, attoseconds) = own.components
        statistics.latencyMicroseconds = UInt64(clamping: seconds * 1_000_000 + attoseconds / 1_000_000_000_000)
        return statistics
    }

    // MARK: The reactor thread

    /// The device's clock starts once the buffer is full (a period and what is read ahead), or
    /// one period after the writer's first bytes, whichever comes first: a writer that sends
    /// in bursts about a period long (PipeWire's quantum of 1024 frames against a 20 ms period)
    /// would otherwise be a few frames short at the second tick, an underrun on every start.
    private func readable(_ events: IOEvents) {
        let (watchToCancel, startNow) = state.withLock { state -> (IOWatch?, Bool) in
            guard !state.finished else { return (nil, false) }
            if state.firstBytes == nil, !state.paused {
                let now = reactor.now
                state.firstBytes = now
                state.timer = reactor.schedule(at: now + configuration.period) { [weak self] in self?.startClock() }
            }
            fill(&state)
            var cancel: IOWatch?
            if state.writerEnd != nil {
                cancel = state.watch
                state.watch = nil
            } else if state.buffer.count >= capacity {
                if events.contains(.hangup) || events.contains(.error) {
                    // Level-triggered hang-ups are reported even with no interest: stop
                    // watching and let the ticks read what is left.
                    cancel = state.watch
                    state.watch = nil
                    state.readsOnTicks = true
                } else {
                    state.setInterest([])
                }
            }
            let startNow = !state.paused && state.started == nil && (state.buffer.count >= capacity || state.writerEnd != nil)
            if startNow {
                state.timer?.cancel()
                state.timer = nil
                state.started = reactor.now
                state.clockStartedAt = reactor.monotonicNow
            }
            if configuration.readsOnTicks, state.started != nil, !state.paused, state.watch != nil, cancel == nil,
                state.buffer.count >= periodBytes
            {
                // The clock runs and the next period is here: the ticks read from now on (a
                // hang-up still wakes the watch).
                state.readsOnTicks = true
                state.setInterest([])
            }
            return (cancel, startNow)
        }
        watchToCancel?.cancel()
        if startNow { tick() }
    }

    /// A period after the first bytes: the clock starts with what came.
    private func startClock() {
        let start = state.withLock { state -> Bool in
            guard !state.finished, !state.paused, state.started == nil else { return false }
            state.started = reactor.now
            // The presentation times count from here too (they once stayed at the last start's,
            // zero on a first start, when a writer slower than the buffer started the clock this way).
            state.clockStartedAt = reactor.monotonicNow
            state.timer = nil
            if configuration.readsOnTicks, state.watch != nil {
                state.readsOnTicks = true
                state.setInterest([])
            }
            return true
        }
        if start { tick() }
    }

    /// Reads what fits into the buffer (`bytes`, the buffer's capacity unless a late tick owes
    /// more); notes the writer's end.
    private func fill(_ state: inout State, upTo bytes: Int? = nil) {
        guard state.writerEnd == nil else { return }
        let limit = max(capacity, bytes ?? 0)
        while state.buffer.count < limit {
            let room = limit - state.buffer.count
            let start = state.buffer.count
            state.buffer.append(contentsOf: repeatElement(0, count: room))
            let got = state.buffer.withUnsafeMutableBytes { bytes in
                recv(descriptor, bytes.baseAddress! + start, room, Int32(MSG_DONTWAIT))
            }
            state.buffer.removeLast(room - max(0, got))
            if got > 0 {
                state.bytesReceived += UInt64(got)
                state.statistics.framesReceived = state.bytesReceived / UInt64(bytesPerFrame)
                continue
            }
            if got == 0 {
                state.writerEnd = .writerClosed
            } else if errno == EINTR {
                continue
            } else if errno != EAGAIN {
                state.writerEnd = errno == ECONNRESET ? .writerClosed : .readFailed(errno)
            }
            return
        }
    }

    private func tick() {
        let outcome = state.withLock { state -> (buffer: SampleBuffer?, end: End?) in
            guard !state.finished, !state.paused, let started = state.started else { return (nil, nil) }
            if state.readsOnTicks { fill(&state) }
            let now = reactor.now
            let due = state.pacing.framesDue(after: now - started)
            // A late tick owes more than the buffer holds: what the writer already sent waits in
            // the socket, and is read now rather than played as silence (the socket, left full,
            // would make the writer drop what it sends next).
            if state.buffer.count < due * bytesPerFrame { fill(&state, upTo: due * bytesPerFrame) }
            let available = state.buffer.count / bytesPerFrame
            let frames = min(due, available)
            var bytes = Array(state.buffer[..<(frames * bytesPerFrame)])
            state.buffer.removeFirst(frames * bytesPerFrame)
            // Top the buffer up now from what the writer already queued, so the writer has room for
            // the next period: a writer ahead of the device then costs one wake-up per tick, not
            // a tick and a read (and two changes of the watch) — the A2DP path's CPU was mostly
            // such wake-ups.
            if frames > 0 { fill(&state) }
            var handed = frames
            var end: End?
            if frames < due {
                if let writerEnd = state.writerEnd {
                    end = writerEnd
                } else {
                    // The writer is late: the device plays silence for what it did not send.
                    let missing = due - frames
                    state.statistics.underruns += 1
                    state.statistics.silenceFrames += UInt64(missing)
                    bytes.append(contentsOf: repeatElement(0, count: missing * bytesPerFrame))
                    handed = due
                }
            } else if state.writerEnd != nil, state.buffer.count < bytesPerFrame {
                end = state.writerEnd
            }
            state.pacing.advance(by: handed)
            var buffer: SampleBuffer?
            if handed > 0 {
                buffer = SampleBuffer(
                    format: format,
                    presentationTime: state.clockStartedAt + state.pacing.duration(ofFrames: state.pacing.position - Int64(handed)),
                    frameCount: handed, data: bytes)
            }
            if end != nil {
                // `active` goes false once the last buffer is counted, below.
                state.finished = true
                state.statistics.partialFrameBytes += UInt64(state.buffer.count)
                state.buffer = []
            } else {
                if state.buffer.count < capacity, !state.readsOnTicks {
                    state.setInterest(.readable)
                } else if state.readsOnTicks, state.watch != nil, state.buffer.count < periodBytes {
                    // Less than the next tick's period is here: the writer's socket holds less
                    // than a period between two ticks (Unix sockets count each write's kernel
                    // overhead, so a writer of 10 ms pieces queues less than half of what the
                    // socket was sized for), and it is woken only once its queue is down to a
                    // quarter. Read as it writes until a period is here, so it is not starved.
                    state.setInterest(.readable)
                }
                // The next tick is when the device's clock has run through one more period.
                let next = started + state.pacing.duration(ofFrames: state.pacing.position + Int64(framesPerPeriod))
                state.timer = reactor.schedule(at: max(next, now)) { [weak self] in self?.tick() }
            }
            return (buffer, end)
        }
        let taken = outcome.buffer.map(deliver) ?? true
        state.withLock { state in
            if let buffer = outcome.buffer {
                if taken {
                    state.statistics.framesDelivered += UInt64(buffer.frameCount)
                } else {
                    state.statistics.framesDropped += UInt64(buffer.frameCount)
                }
            }
            if outcome.end != nil { state.statistics.active = false }
        }
        if let end = outcome.end {
            let watch = state.withLock { state in
                defer { state.watch = nil }
                return state.watch
            }
            if let watch {
                watch.cancel { close(self.descriptor) }
            } else {
                close(descriptor)
            }
            ended(end)
        }
    }
}
