#if canImport(Glibc)
import Glibc
#endif
import CPipeWire
import RawVideo
public import RoutingModel
import Synchronization

/// Video from PipeWire into a route's real-time video (`Session1.AcquireVideo`): a compositor's
/// screen-cast stream, a camera or a GStreamer pipeline linked to a node of ours
/// (``Mode/sinkNode(deviceName:)``, the node `mediarouted pipewire-video-sink` publishes per route), or
/// a stream of ours linked to a node that produces video (``Mode/capture(target:)``,
/// `mediaroutectl mirror --source pipewire:NODE`).
///
/// PipeWire and the producer settle the format (the node takes I420, NV12, YUY2 and 32-bit RGB,
/// any size the route takes, up to 120 frames per second); the route's video is acquired in the
/// settled format once pictures flow — the even part of the size, I420 (or NV12 as it came) —
/// released when the producer pauses or unlinks, and acquired again in the new format when the
/// producer changes it. A screen cast's variable rate (0/1) is taken at its maximum, at most 30.
/// Pictures go to the route's socket through ``LatestPictureWriter``: PipeWire's loop never waits.
///
/// `run()` blocks its thread on PipeWire's loop; ``stop()`` may be called from any thread.
public final class PipeWireVideoCapture: @unchecked Sendable {
    // Safe: the non-atomic state below (`stream`, `layout`, `outputFormat`, `scratch`,
    // `nextAcquisition`, `streaming`) is touched only on the thread running PipeWire's loop
    // (`run()`, and the stream's callbacks, which run on that loop: no RT_PROCESS flag); the
    // acquisition task and `stop()` reach only the Mutex and atomics.

    /// Where the pictures come from.
    public enum Mode: Sendable, Hashable {
        /// A `Video/Sink` node named after the device (``PipeWireVideoSink/nodeName(for:)``) that producers link to.
        case sinkNode(deviceName: String)
        /// A capture stream linked to the node of this name or serial.
        case capture(target: String)
    }

    /// What the capture did, for the mirror's last line and the tests.
    public struct Counts: Sendable, Hashable {
        /// Pictures PipeWire delivered.
        public var picturesIn: UInt64 = 0
        /// Pictures written whole into the route's socket.
        public var picturesWritten: UInt64 = 0
        /// Pictures replaced by a newer one before the route took them.
        public var picturesReplaced: UInt64 = 0
        /// Pictures that could not be converted (a malformed buffer), or came with no route to take them.
        public var picturesNotTaken: UInt64 = 0
        /// The route's format from the last negotiation.
        public var format: VideoFrameFormat?
    }

    let mode: Mode
    private let acquire: @Sendable (VideoFrameFormat) async throws -> Int32
    private let log: @Sendable (String) -> Void
    private let quitOnSignals: Bool

    private var mainLoop: OpaquePointer?
    private var stream: OpaquePointer?
    private var wake: [Int32] = [-1, -1]
    private var layout: RawPictureLayout?
    private var outputFormat: VideoFrameFormat?
    private var scratch: [UInt8] = []
    /// The picture count from which the route's video may be acquired again: tries are paced by
    /// the producer's own pictures (a second's worth after a loss, two after a refusal), no clock needed.
    private var nextAcquisition: UInt64 = 0
    private var streaming = false

    private let writer = Mutex<LatestPictureWriter?>(nil)
    private let acquiring = Atomic<Bool>(false)
    /// Acquisitions that failed in a row (the first is said, the rest are not).
    private let acquisitionFailures = Atomic<Int>(0)
    /// Bumped when the format changes or the producer pauses: an acquisition begun before is void.
    private let generation = Atomic<UInt64>(0)
    private let quitRequested = Atomic<Bool>(false)
    /// The wake-up pipe's write end while the loop runs, else -1.
    private let wakeWriter = Mutex<Int32>(-1)
    private let quitting = Atomic<Bool>(false)
    private let lost = Atomic<Bool>(false)
    private let ended = Atomic<Bool>(false)
    private let picturesIn = Atomic<UInt64>(0)
    private let picturesNotTaken = Atomic<UInt64>(0)
    private let writtenBefore = Atomic<UInt64>(0)
    private let replacedBefore = Atomic<UInt64>(0)
    private let negotiated = Mutex<VideoFrameFormat?>(nil)
    /// The newest picture while the route's video is being acquired (handed over first).
    private let held = Mutex<[UInt8]?>(nil)

    /// - Parameters:
    ///   - acquire: acquires the route's video in a format and returns the socket's descriptor
    ///     (owned by the capture from then on).
    ///   - quitOnSignals: SIGTERM and SIGINT end the loop (a process of its own); off when the
    ///     caller handles them and calls ``stop()``.
    public init(
        mode: Mode, quitOnSignals: Bool, acquire: @escaping @Sendable (VideoFrameFormat) async throws -> Int32,
        log: @escaping @Sendable (String) -> Void
    ) {
        self.mode = mode
        self.quitOnSignals = quitOnSignals
        self.acquire = acquire
        self.log = log
    }

    /// The counts so far.
    public var counts: Counts {
        let current = writer.withLock { $0 }
        return Counts(
            picturesIn: picturesIn.load(ordering: .relaxed),
            picturesWritten: writtenBefore.load(ordering: .relaxed) + (current?.written.load(ordering: .relaxed) ?? 0),
            picturesReplaced: replacedBefore.load(ordering: .relaxed) + (current?.replaced.load(ordering: .relaxed) ?? 0),
            picturesNotTaken: picturesNotTaken.load(ordering: .relaxed),
            format: negotiated.withLock { $0 })
    }

    /// In ``Mode/capture(target:)``: the route's video ended under the capture (the device failed,
    /// or another writer took the route), which ended the loop.
    public var routeVideoEnded: Bool { ended.load(ordering: .acquiring) }

    /// Ends the loop (from any thread); `run()` returns after releasing the route's video.
    public func stop() {
        quitRequested.store(true, ordering: .releasing)
        wakeWriter.withLock { descriptor in
            guard descriptor >= 0 else { return }
            var one: UInt8 = 1
            _ = write(descriptor, &one, 1)
        }
    }

    /// Connects to PipeWire and runs its loop on this thread until ``stop()``, a signal
    /// (with `quitOnSignals`), PipeWire going away, or (capturing) the route's video ending.
    /// - Returns: 0; ``PipeWireSink/exitUnavailable``; ``PipeWireSink/exitPipeWireLost``; 1: failed.
    public func run(retrying: Bool = false) -> Int32 {
        var reason = [CChar](repeating: 0, count: 256)
        guard mr_pw_open(&reason, reason.count) == 0 else {
            let text = String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            log("PipeWire is not available (\(text)): \(what)")
            return PipeWireSink.exitUnavailable
        }
        let api = mr_pw()!.pointee
        api.`init`(nil, nil)
        guard let mainLoop = api.main_loop_new(nil), let loop = api.main_loop_get_loop(mainLoop) else {
            log("PipeWire: no main loop")
            return 1
        }
        self.mainLoop = mainLoop
        defer { api.main_loop_destroy(mainLoop) }
        guard makePipe(&wake) else { return 1 }
        for end in wake { _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK) }
        wakeWriter.withLock { $0 = wake[1] }
        defer {
            close(wake[0])
            // Under the lock: a stop() from another thread never writes into a reused descriptor.
            wakeWriter.withLock { descriptor in
                close(descriptor)
                descriptor = -1
            }
        }
        let context = Unmanaged.passRetained(self).toOpaque()
        defer { Unmanaged<PipeWireVideoCapture>.fromOpaque(context).release() }
        let properties: UnsafeMutablePointer<pw_properties>?
        switch mode {
        case .sinkNode(let deviceName):
            properties = mr_pw_video_sink_properties(PipeWireVideoSink.nodeName(for: deviceName), "MediaRoute video: \(deviceName)")
        case .capture(let target):
            properties = mr_pw_video_capture_properties(target)
        }
        var events = mr_pw_video_stream_events(
            { data in Unmanaged<PipeWireVideoCapture>.fromOpaque(data!).takeUnretainedValue().process() },
            { data, _, state, error in
                Unmanaged<PipeWireVideoCapture>.fromOpaque(data!).takeUnretainedValue().stateChanged(state, error: error)
            },
            { data, id, param in
                guard id == SPA_PARAM_Format.rawValue else { return }
                Unmanaged<PipeWireVideoCapture>.fromOpaque(data!).takeUnretainedValue().formatChanged(param)
            })
        guard let stream = api.stream_new_simple(loop, "MediaRoute video", properties, &events, context) else {
            log("PipeWire: the stream was not made")
            return 1
        }
        self.stream = stream
        var formatBytes = [UInt8](repeating: 0, count: 1024)
        let connected = formatBytes.withUnsafeMutableBytes { formatBuffer -> Int32 in
            var params: [UnsafePointer<spa_pod>?] = [
                mr_pw_video_formats(formatBuffer.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt32(formatBuffer.count), 1280, 720, 30)
            ]
            var flags = PW_STREAM_FLAG_MAP_BUFFERS.rawValue
            if case .capture = mode { flags |= PW_STREAM_FLAG_AUTOCONNECT.rawValue }
            return params.withUnsafeMutableBufferPointer { params in
                api.stream_connect(stream, SPA_DIRECTION_INPUT, UInt32.max /* PW_ID_ANY */, pw_stream_flags(flags), params.baseAddress, UInt32(params.count))
            }
        }
        guard connected >= 0 else {
            api.stream_destroy(stream)
            if connected == -EHOSTDOWN || connected == -ECONNREFUSED || connected == -ENOENT {
                if !retrying {
                    let directory = getenv("XDG_RUNTIME_DIR").map { String(cString: $0) } ?? "unset"
                    log("PipeWire is not running (XDG_RUNTIME_DIR \(directory)): \(what)")
                }
                return PipeWireSink.exitUnavailable
            }
            log("PipeWire: the stream did not connect (\(String(cString: strerror(-connected))))")
            return 1
        }
        _ = mr_pw_watch_readable(loop, wake[0], { data, _, _ in
            Unmanaged<PipeWireVideoCapture>.fromOpaque(data!).takeUnretainedValue().woken()
        }, context)
        if quitOnSignals {
            for signal in [SIGTERM, SIGINT] {
                mr_pw_quit_on_signal(loop, signal, { data, _ in Unmanaged<PipeWireVideoCapture>.fromOpaque(data!).takeUnretainedValue().quit() }, context)
            }
        }
        if quitRequested.load(ordering: .acquiring) { quit() }
        _ = api.main_loop_run(mainLoop)
        quitting.store(true, ordering: .relaxed)
        api.stream_destroy(stream)
        self.stream = nil
        release()
        return lost.load(ordering: .relaxed) ? PipeWireSink.exitPipeWireLost : 0
    }

    /// Runs ``run(retrying:)`` on a thread of its own (PipeWire's loop blocks it) and returns its status.
    public func runOnOwnThread() async -> Int32 {
        await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
            final class Start {
                let capture: PipeWireVideoCapture
                let continuation: CheckedContinuation<Int32, Never>
                init(_ capture: PipeWireVideoCapture, _ continuation: CheckedContinuation<Int32, Never>) {
                    self.capture = capture
                    self.continuation = continuation
                }
            }
            let context = Unmanaged.passRetained(Start(self, continuation)).toOpaque()
            var thread = pthread_t()
            let created = pthread_create(&thread, nil, { context in
                let start = Unmanaged<Start>.fromOpaque(context!).takeRetainedValue()
                start.continuation.resume(returning: start.capture.run())
                return nil
            }, context)
            if created == 0 {
                pthread_detach(thread)
            } else {
                Unmanaged<Start>.fromOpaque(context).release()
                log("no thread for PipeWire's loop (error \(created))")
                continuation.resume(returning: 1)
            }
        }
    }

    private var what: String {
        switch mode {
        case .sinkNode(let deviceName): "no video node for \(deviceName)"
        case .capture(let target): "no video from \(target)"
        }
    }

    // MARK: On PipeWire's loop

    private func quit() {
        quitting.store(true, ordering: .relaxed)
        if let mainLoop { _ = mr_pw()!.pointee.main_loop_quit(mainLoop) }
    }

    private func woken() {
        var bytes = [UInt8](repeating: 0, count: 64)
        while read(wake[0], &bytes, bytes.count) > 0 {}
        if quitRequested.load(ordering: .acquiring) { quit() }
    }

    private func stateChanged(_ state: pw_stream_state, error: UnsafePointer<CChar>?) {
        switch state {
        case PW_STREAM_STATE_STREAMING:
            streaming = true
        case PW_STREAM_STATE_PAUSED:
            // Unlinked or paused by the producer: the TV shows the last picture until the route's
            // video ends; it is acquired again when pictures come.
            streaming = false
            release()
        case PW_STREAM_STATE_ERROR, PW_STREAM_STATE_UNCONNECTED:
            streaming = false
            guard !quitting.load(ordering: .relaxed) else { return }
            let text = error.flatMap { String(validatingCString: $0) } ?? "disconnected"
            if case .capture(let target) = mode {
                // The node went (node.dont-reconnect: our stream goes with it), or PipeWire did.
                log("no more video from \(target) (\(text))")
            } else {
                log("PipeWire went away (\(text)): \(what) until it is back")
                lost.store(true, ordering: .relaxed)
            }
            quit()
        default:
            break
        }
    }

    private func formatChanged(_ param: UnsafePointer<spa_pod>?) {
        var pixel: Int32 = -1
        var width: UInt32 = 0, height: UInt32 = 0, rateNumerator: UInt32 = 0, rateDenominator: UInt32 = 0, maxNumerator: UInt32 = 0, maxDenominator: UInt32 = 0
        guard let param, mr_pw_parse_video_format(param, &pixel, &width, &height, &rateNumerator, &rateDenominator, &maxNumerator, &maxDenominator) == 0 else {
            return  // the format was cleared (unlinked): nothing flows until the next one
        }
        let formats: [RawPictureLayout.PixelFormat] = [.i420, .nv12, .yuy2, .bgrx, .rgbx, .xrgb, .xbgr]
        guard pixel >= 0, Int(pixel) < formats.count else {
            log("PipeWire: a video format the node does not take")
            return
        }
        var numerator = Int(rateNumerator), denominator = Int(rateDenominator)
        if numerator == 0 || denominator == 0 {
            // Variable (a screen cast: a picture when something changed): paced at its maximum, at most 30.
            numerator = Int(maxNumerator)
            denominator = Int(maxDenominator)
            if numerator == 0 || denominator == 0 || numerator > 30 * denominator {
                numerator = 30
                denominator = 1
            }
        }
        let layout = RawPictureLayout(pixelFormat: formats[Int(pixel)], width: Int(width), height: Int(height))
        do {
            let format = try layout.outputFormat(frameRateNumerator: numerator, frameRateDenominator: denominator)
            if format != outputFormat || layout != self.layout { release() }
            self.layout = layout
            outputFormat = format
            negotiated.withLock { $0 = format }
            log("PipeWire video \(layout.pixelFormat.rawValue) \(width)x\(height) at \(numerator)/\(denominator): the route takes \(format)")
        } catch {
            self.layout = nil
            outputFormat = nil
            release()
            log("PipeWire video \(width)x\(height) at \(numerator)/\(denominator) is not taken: \(error)")
        }
        guard let layout = self.layout else { return }
        let (size, stride) = layout.packedSize
        var bytes = [UInt8](repeating: 0, count: 512)
        bytes.withUnsafeMutableBytes { buffer in
            var params: [UnsafePointer<spa_pod>?] = [
                mr_pw_video_buffers(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt32(buffer.count), Int32(clamping: size), Int32(clamping: stride))
            ]
            if let stream { _ = params.withUnsafeMutableBufferPointer { mr_pw()!.pointee.stream_update_params(stream, $0.baseAddress, 1) } }
        }
    }

    private func process() {
        guard let stream, let buffer = mr_pw()!.pointee.stream_dequeue_buffer(stream) else { return }
        defer { _ = mr_pw()!.pointee.stream_queue_buffer(stream, buffer) }
        var size: UInt32 = 0
        var stride: Int32 = 0
        guard mr_pw_buffer_plane(buffer, 0, &size, &stride) != nil, size > 0 else { return }  // no new picture
        picturesIn.add(1, ordering: .relaxed)
        guard let layout, let format = outputFormat else {
            picturesNotTaken.add(1, ordering: .relaxed)
            return
        }
        var current = writer.withLock { $0 }
        if let writer = current, writer.lost.load(ordering: .acquiring) {
            // The route's video ended under us (its device failed, or an app took the route).
            release()
            current = nil
            if case .capture = mode {
                ended.store(true, ordering: .releasing)
                log("the route's video ended")
                quit()
                return
            }
            nextAcquisition = picturesIn.load(ordering: .relaxed) + UInt64(format.frameRate.rounded(.up))
        }
        if current == nil {
            let count = picturesIn.load(ordering: .relaxed)
            if nextAcquisitionAfterFailure.exchange(false, ordering: .acquiringAndReleasing) { nextAcquisition = count + 2 * UInt64(format.frameRate.rounded(.up)) }
            if count >= nextAcquisition { startAcquisition(format) }
            guard acquiring.load(ordering: .acquiring) else {
                picturesNotTaken.add(1, ordering: .relaxed)
                return
            }
        }
        var planes: [RawPictureLayout.Plane] = []
        for index in 0..<min(3, mr_pw_buffer_planes(buffer)) {
            guard let bytes = mr_pw_buffer_plane(buffer, index, &size, &stride) else { break }
            planes.append(RawPictureLayout.Plane(bytes: UnsafeRawBufferPointer(start: bytes, count: Int(size)), stride: Int(stride)))
        }
        // A producer that leaves the stride unset packs its rows.
        for index in planes.indices where planes[index].stride <= 0 {
            let chroma = index > 0 && layout.pixelFormat == .i420
            planes[index].stride = layout.width * [RawPictureLayout.PixelFormat.yuy2: 2, .bgrx: 4, .rgbx: 4, .xrgb: 4, .xbgr: 4][layout.pixelFormat, default: 1] / (chroma ? 2 : 1)
        }
        do {
            try layout.convert(planes, into: &scratch, as: format)
        } catch {
            picturesNotTaken.add(1, ordering: .relaxed)
            return
        }
        if let current {
            current.offer(&scratch)
            return
        }
        // The route is being acquired: the newest picture waits for it and goes first once it is
        // (the first pictures of a stream are not lost to the acquisition's round trip).
        let replaced = held.withLock { slot -> Bool in
            let had = slot != nil
            var kept = slot ?? []
            swap(&kept, &scratch)
            slot = kept
            return had
        }
        if replaced { picturesNotTaken.add(1, ordering: .relaxed) }
    }

    private func startAcquisition(_ format: VideoFrameFormat) {
        guard streaming, !acquiring.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let expected = generation.load(ordering: .acquiring)
        Task {
            defer { acquiring.store(false, ordering: .releasing) }
            do {
                let descriptor = try await acquire(format)
                guard generation.load(ordering: .acquiring) == expected, !quitting.load(ordering: .relaxed) else {
                    close(descriptor)  // the format changed, or the producer paused, meanwhile
                    return
                }
                guard let writer = LatestPictureWriter(descriptor: descriptor) else { return }
                if var first = held.withLock({ slot -> [UInt8]? in defer { slot = nil }; return slot }), first.count == format.frameBytes {
                    writer.offer(&first)
                }
                let previous = self.writer.withLock { slot -> LatestPictureWriter? in defer { slot = writer }; return slot }
                previous?.stop()
                if acquisitionFailures.exchange(0, ordering: .relaxed) > 0 { log("the route takes video again") }
            } catch {
                if acquisitionFailures.add(1, ordering: .relaxed).newValue == 1 { log("no real-time video on the route: \(error)") }
                if case .capture = mode {
                    ended.store(true, ordering: .releasing)
                    stop()
                }
                nextAcquisitionAfterFailure.store(true, ordering: .releasing)
            }
        }
    }

    /// Set by a failed acquisition (off the loop): the loop waits before the next try.
    private let nextAcquisitionAfterFailure = Atomic<Bool>(false)

    /// Releases the route's video (closing its socket: the device shows what was sent, then stops).
    private func release() {
        generation.add(1, ordering: .acquiringAndReleasing)
        held.withLock { $0 = nil }
        if let previous = writer.withLock({ slot -> LatestPictureWriter? in defer { slot = nil }; return slot }) {
            previous.stop()
            writtenBefore.add(previous.written.load(ordering: .relaxed), ordering: .relaxed)
            replacedBefore.add(previous.replaced.load(ordering: .relaxed), ordering: .relaxed)
        }
    }
}
