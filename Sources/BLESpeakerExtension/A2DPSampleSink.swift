public import BluetoothAudio
public import MediaClock
public import MediaDevice
public import RoutingModel
import Synchronization
public import Transport

/// One route's A2DP stream on the thread that delivers its samples (the I/O reactor's): each
/// buffer is encoded for the speaker's codec and sent on the transport's socket there, with the
/// bit rate stepped as the link and the box allow (``LinkAdaptation``) — no hop to the
/// extension's actor per buffer. The actor decides the phases (``beginAcquiring()``,
/// ``start(socket:encoder:sampleRate:)``, ``stop()``); what only it can act on (the socket
/// closed, a step to announce, a codec too costly for the box) comes to it as an ``Event``.
public final class A2DPSampleSink: RealtimeSampleReceiver {
    /// What the actor hears from the delivering thread.
    public enum Event: Sendable {
        /// The speaker's side closed the socket (errno): the stream went, or is being set up again.
        case socketClosed(Int32)
        /// The encoder's bit rate was stepped.
        case bitrateStepped(LinkAdaptation.Step, from: Int, to: Int, cause: String, dropped: UInt64, queued: Int)
        /// The box cannot encode this codec in time at any of its rates.
        case codecTooCostly(overloadedWindows: Int)
        /// Samples that waited for the stream were dropped: only the newest 100 ms went on.
        case waitingDropped(buffers: Int)
    }

    /// Where the route's stream is.
    private enum Phase {
        /// No samples flow (none started, or they stopped): buffers are dropped.
        case stopped
        /// The stream is being acquired: buffers wait (at most 100 of them).
        case acquiring([SampleBuffer])
        /// `inline`: encoded on the delivering thread; otherwise on a task of its own, through a
        /// bounded queue (a codec whose encoding is not short on every box: AAC).
        case ready(socket: PacketSocket, encoder: any BluetoothAudioEncoder, adaptation: LinkAdaptation, inline: Bool)
    }

    /// What a stream that ran did, for the log line that ends it.
    public struct Summary: Sendable {
        public let socket: PacketSocket
        public let encoder: any BluetoothAudioEncoder
        public let adaptation: LinkAdaptation
    }

    private let phase = Mutex(Phase.stopped)
    private let clock: any HostClock
    private let events: @Sendable (Event) -> Void
    /// Buffers the acquiring phase holds at most (about two seconds of 20 ms periods).
    static let waitingLimit = 100
    /// Buffers a stream that is not encoded inline may have waiting for its task (half a second
    /// of 20 ms periods, as the route system's queue to an actor); more are dropped and counted.
    static let queueLimit = 25
    private let queue: AsyncStream<SampleBuffer>.Continuation
    /// Buffers in ``queue`` not yet handled: while any are, later ones queue behind them (order).
    private let queued = Atomic<Int>(0)

    /// - Parameters:
    ///   - clock: what encoding time is measured on (the box's load).
    ///   - events: called on the delivering thread, outside the sink's lock; must not block.
    public init(clock: any HostClock, events: @escaping @Sendable (Event) -> Void) {
        self.clock = clock
        self.events = events
        let (buffers, queue) = AsyncStream.makeStream(of: SampleBuffer.self, bufferingPolicy: .bufferingOldest(Self.queueLimit))
        self.queue = queue
        // Ends when the sink goes (its continuation with it).
        Task { [weak self] in
            for await buffer in buffers {
                guard let self else { return }
                self.handleQueued(buffer)
            }
        }
    }

    deinit { queue.finish() }

    /// Samples start (or the stream went and another is awaited): buffers wait from now on.
    public func beginAcquiring() {
        phase.withLock { $0 = .acquiring([]) }
    }

    /// Whether a stream is being awaited.
    public var isAcquiring: Bool {
        phase.withLock { if case .acquiring = $0 { true } else { false } }
    }

    /// Whether samples go to a stream now.
    public var isReady: Bool {
        phase.withLock { if case .ready = $0 { true } else { false } }
    }

    /// Whether samples flow at all (awaited or sent).
    public var isActive: Bool {
        phase.withLock { if case .stopped = $0 { false } else { true } }
    }

    /// The encoder's bit rate now, while a stream runs.
    public var bitrate: Int? {
        phase.withLock { if case .ready(_, let encoder, _, _) = $0 { encoder.bitrate } else { nil } }
    }

    /// The stream was acquired: samples go to `socket` through `encoder` from now on. What
    /// waited is late — the speaker plays what arrives as it arrives, so all of it at once would
    /// overflow the socket and add its length to the latency for good — so the newest 100 ms
    /// go first and the rest is dropped (``Event/waitingDropped(buffers:)``). False when samples
    /// stopped meanwhile (nothing is sent). `inline`: encode on the delivering thread (a codec
    /// whose encoding is short: SBC, aptX, LDAC); otherwise on a task of the sink's own, so a
    /// box slower than the codec cannot hold the delivering thread (and every other stream and
    /// socket on it) up.
    public func start(socket: PacketSocket, encoder: any BluetoothAudioEncoder, sampleRate: Int, inline: Bool = true) -> Bool {
        var emitted: [Event] = []
        let started = phase.withLock { phase -> Bool in
            guard case .acquiring(let waiting) = phase else { return false }
            var kept: [SampleBuffer] = []
            var keptFrames = 0
            for buffer in waiting.reversed() {
                let frames = buffer.data.count / max(1, buffer.format.bytesPerFrame ?? 4)
                guard keptFrames + frames <= buffer.format.sampleRate / 10 || kept.isEmpty else { break }
                kept.append(buffer)
                keptFrames += frames
            }
            if kept.count < waiting.count { emitted.append(.waitingDropped(buffers: waiting.count - kept.count)) }
            phase = .ready(socket: socket, encoder: encoder, adaptation: LinkAdaptation(sampleRate: sampleRate), inline: inline)
            for buffer in kept.reversed() { send(buffer, &phase, &emitted) }
            return true
        }
        for event in emitted { events(event) }
        return started
    }

    /// Samples stop (or the stream went): nothing is sent from now on. Returns the stream that
    /// ran, for its encoder's last packets and the log.
    @discardableResult
    public func stop(awaitingAnother: Bool = false) -> Summary? {
        phase.withLock { phase in
            defer { phase = awaitingAnother ? .acquiring([]) : .stopped }
            guard case .ready(let socket, let encoder, let adaptation, _) = phase else { return nil }
            return Summary(socket: socket, encoder: encoder, adaptation: adaptation)
        }
    }

    public func receive(_ buffer: SampleBuffer) -> Bool {
        if queued.load(ordering: .acquiring) > 0 { return enqueue(buffer) }
        var emitted: [Event] = []
        let handled = phase.withLock { phase -> Bool in
            if case .ready(_, _, _, inline: false) = phase { return false }
            handle(buffer, &phase, &emitted)
            return true
        }
        for event in emitted { events(event) }
        return handled || enqueue(buffer)
    }

    private func enqueue(_ buffer: SampleBuffer) -> Bool {
        queued.add(1, ordering: .acquiringAndReleasing)
        if case .enqueued = queue.yield(buffer) { return true }
        queued.subtract(1, ordering: .acquiringAndReleasing)
        return false
    }

    private func handleQueued(_ buffer: SampleBuffer) {
        var emitted: [Event] = []
        phase.withLock { handle(buffer, &$0, &emitted) }
        queued.subtract(1, ordering: .acquiringAndReleasing)
        for event in emitted { events(event) }
    }

    /// What the phase does with a buffer: nothing when stopped, keeps it while the stream is
    /// acquired, sends it when it runs.
    private func handle(_ buffer: SampleBuffer, _ phase: inout Phase, _ emitted: inout [Event]) {
        switch phase {
        case .stopped:
            return
        case .acquiring(var waiting):
            phase = .stopped  // the array is not copied while it grows
            waiting.append(buffer)
            if waiting.count > Self.waitingLimit { waiting.removeFirst() }
            phase = .acquiring(waiting)
        case .ready:
            send(buffer, &phase, &emitted)
        }
    }

    /// Encodes and sends one buffer, then lets the link's and the box's state step the bit rate.
    private func send(_ buffer: SampleBuffer, _ phase: inout Phase, _ emitted: inout [Event]) {
        guard case .ready(let socket, let encoder, var adaptation, let inline) = phase else { return }
        let pcm = buffer.stereoS16LE
        var dropped = 0
        let started = clock.now()
        let encoded: [[UInt8]]
        do {
            encoded = try encoder.packets(from: pcm)
        } catch {
            return
        }
        let encoding = clock.now() - started
        for packet in encoded {
            switch socket.send(packet) {
            case .sent: break
            case .dropped: dropped += 1
            case .closed(let code):
                // bluetoothd closes the socket when the stream goes, which may be the speaker
                // setting it up again (another codec): the actor waits for that.
                phase = .acquiring([])
                emitted.append(.socketClosed(code))
                return
            }
        }
        let queued = socket.mtu > 0 ? socket.queuedBytes / socket.mtu : 0
        encoder.observeQueue(packets: queued)
        let overloadedBefore = adaptation.overloadedWindows
        let costlyBefore = adaptation.codecTooCostly
        if let step = adaptation.record(samples: pcm.count / 4, dropped: dropped, queuedPackets: queued, encoding: encoding) {
            let before = encoder.bitrate
            let taken = encoder.stepBitrate(down: step == .down)
            adaptation.stepped(step, taken: taken)
            if taken {
                let cause = step == .up ? "link recovered" : adaptation.overloadedWindows > overloadedBefore ? "encoding overloads the box" : "link congested"
                emitted.append(.bitrateStepped(step, from: before, to: encoder.bitrate, cause: cause, dropped: adaptation.droppedPackets, queued: queued))
            }
        }
        if adaptation.codecTooCostly, !costlyBefore { emitted.append(.codecTooCostly(overloadedWindows: adaptation.overloadedWindows)) }
        phase = .ready(socket: socket, encoder: encoder, adaptation: adaptation, inline: inline)
    }
}
