#if canImport(Glibc)
import Glibc
#endif
import CPipeWire
public import DBus
import MediaRouteBusAPI
public import RoutingModel
import Synchronization

/// A PipeWire sink node for one route: what applications on the box play to it goes into
/// the route's real-time audio (`Session1.AcquireAudio`), so `pw-play --target`, GStreamer
/// or mpd play to the speaker as the seeds route the system's audio to an extension.
///
/// It runs as `mediarouted pipewire-sink …`, a process the daemon starts for each route
/// that takes samples (`PipeWireSinkLauncher`) and stops with it (SIGTERM; it also dies
/// with the daemon): libpipewire is opened there (dlopen), never in the idle daemon, and a
/// box without PipeWire gets one line saying so. The node is `Audio/Sink`, named after the
/// device, with the route's latency. The route's audio is acquired when something plays to
/// the node and released when PipeWire pauses it, so `mediaroutectl stream` and other apps
/// can still acquire the route directly while the node is idle; if one does, the node's
/// delivery ends and is acquired again when the node next plays.
public enum PipeWireSink {
    /// What the daemon passes on the command line.
    public struct Options: Sendable, Hashable {
        public var bus: String
        public var session: DBusObjectPath
        public var deviceName: String
        public var format: SampleBuffer.Format
        /// The route's latency (its device's buffer and the daemon's pacing): the node publishes it
        /// on its port, so players linked to it account for it.
        public var latency: Duration
        /// Started again after PipeWire went away: a PipeWire not (yet) back exits 69 without a word.
        public var retrying: Bool

        public init(
            bus: String, session: DBusObjectPath, deviceName: String,
            format: SampleBuffer.Format = SampleBuffer.Format(encoding: .pcmF32LE, sampleRate: 48_000, channels: 2),
            latency: Duration = .zero, retrying: Bool = false
        ) {
            self.bus = bus
            self.session = session
            self.deviceName = deviceName
            self.format = format
            self.latency = latency
            self.retrying = retrying
        }

        /// The arguments after `mediarouted pipewire-sink`.
        public var arguments: [String] {
            ["--bus", bus, "--session", session.rawValue, "--device", deviceName, "--format", format.name, "--latency-us", String(latencyMicroseconds)]
                + (retrying ? ["--retrying"] : [])
        }

        var latencyMicroseconds: UInt64 {
            let (seconds, attoseconds) = latency.components
            return seconds < 0 ? 0 : UInt64(seconds) &* 1_000_000 &+ UInt64(attoseconds / 1_000_000_000_000)
        }

        /// Options from `arguments`, or why they are not.
        public static func parse(_ arguments: [String]) -> Result<Options, PipeWireSinkError> {
            let values: [String: String]
            let retrying: Bool
            switch PipeWireSink.readOptions(
                arguments, keys: ["--bus", "--session", "--device", "--format", "--latency-us"],
                usage: "usage: mediarouted pipewire-sink --bus ADDRESS --session PATH --device NAME [--format f32le/48000/2] [--latency-us N] [--retrying]")
            {
            case .failure(let error): return .failure(error)
            case .success(let read): (values, retrying) = read
            }
            guard let bus = values["--bus"], let path = values["--session"].flatMap(DBusObjectPath.init), let device = values["--device"] else {
                return .failure(PipeWireSinkError("pipewire-sink needs --bus, --session and --device"))
            }
            guard let format = SampleBuffer.Format(name: values["--format"] ?? "f32le/48000/2"), format.bytesPerFrame != nil else {
                return .failure(PipeWireSinkError("--format must be like f32le/48000/2"))
            }
            var latency = Duration.zero
            if let text = values["--latency-us"] {
                // At most ten seconds: no route buffers more.
                guard let microseconds = UInt32(text), microseconds <= 10_000_000 else {
                    return .failure(PipeWireSinkError("--latency-us must be microseconds, at most 10000000"))
                }
                latency = .microseconds(microseconds)
            }
            return .success(Options(bus: bus, session: path, deviceName: device, format: format, latency: latency, retrying: retrying))
        }
    }

    /// `--key value` pairs of `keys` and the `--retrying` flag; anything else is `usage`.
    static func readOptions(_ arguments: [String], keys: Set<String>, usage: String) -> Result<([String: String], Bool), PipeWireSinkError> {
        var values: [String: String] = [:]
        var retrying = false
        var rest = arguments[...]
        while let key = rest.popFirst() {
            if key == "--retrying" {
                retrying = true
                continue
            }
            guard keys.contains(key), let value = rest.popFirst() else { return .failure(PipeWireSinkError(usage)) }
            values[key] = value
        }
        return .success((values, retrying))
    }

    /// Exit status: PipeWire is not there (not installed, not running).
    public static let exitUnavailable: Int32 = 69
    /// Exit status: PipeWire went away under a running node (restarted, or stopped); the
    /// daemon starts the sink again (``Options/retrying``) until PipeWire is back.
    public static let exitPipeWireLost: Int32 = 75

    /// The node's name in PipeWire: `mediaroute.<device>`, letters and digits kept.
    public static func nodeName(for deviceName: String) -> String {
        "mediaroute." + String(deviceName.lowercased().map { $0.isLetter || $0.isNumber ? $0 : "_" })
    }

    /// Publishes the node and runs PipeWire's loop on this thread until SIGTERM or SIGINT.
    /// - Returns: the process's exit status (0; ``exitUnavailable``; ``exitPipeWireLost``; 1: failed).
    public static func run(_ options: Options) -> Int32 {
        _ = dieWithParent()
        blockQuitSignals()
        var reason = [CChar](repeating: 0, count: 256)
        guard mr_pw_open(&reason, reason.count) == 0 else {
            let text = String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            printError("PipeWire is not available (\(text)): no sink node for \(options.deviceName)")
            return exitUnavailable
        }
        let api = mr_pw()!.pointee
        api.`init`(nil, nil)
        guard let mainLoop = api.main_loop_new(nil), let loop = api.main_loop_get_loop(mainLoop) else {
            printError("PipeWire: no main loop")
            return 1
        }
        var wake: [Int32] = [-1, -1]
        guard pipe(&wake) == 0 else { return 1 }
        for end in wake { _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK); _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let state = SinkState(options: options, mainLoop: mainLoop, wake: wake)
        let context = Unmanaged.passRetained(state).toOpaque()
        defer { Unmanaged<SinkState>.fromOpaque(context).release() }
        // PipeWire's default quantum (1024 frames at 48 kHz, about 21 ms): each process call hands that much.
        let latency = "\(SinkState.quantumFrames)/\(options.format.sampleRate)"
        let properties = mr_pw_sink_properties(nodeName(for: options.deviceName), "MediaRoute: \(options.deviceName)", latency)
        var events = mr_pw_stream_events(
            { data in Unmanaged<SinkState>.fromOpaque(data!).takeUnretainedValue().process() },
            { data, _, streamState, error in
                let sink = Unmanaged<SinkState>.fromOpaque(data!).takeUnretainedValue()
                if streamState == PW_STREAM_STATE_PAUSED {
                    sink.releaseAudio()
                } else if streamState == PW_STREAM_STATE_ERROR || (streamState == PW_STREAM_STATE_UNCONNECTED && !sink.quitting.load(ordering: .relaxed)) {
                    // The connection to PipeWire broke (it restarted or stopped): the route's audio
                    // is released and the daemon starts a sink again once PipeWire is back.
                    PipeWireSink.printError(
                        "PipeWire went away (\(error.flatMap { String(validatingCString: $0) } ?? "disconnected")): node \(PipeWireSink.nodeName(for: sink.options.deviceName)) gone until it is back")
                    sink.lost.store(true, ordering: .relaxed)
                    sink.quit()
                }
            })
        guard let stream = api.stream_new_simple(loop, "MediaRoute: \(options.deviceName)", properties, &events, context) else {
            printError("PipeWire: the stream was not made")
            return 1
        }
        state.stream = stream
        var formatBytes = [UInt8](repeating: 0, count: 1024)
        var latencyBytes = [UInt8](repeating: 0, count: 256)
        let connected = formatBytes.withUnsafeMutableBytes { formatBuffer -> Int32 in
            latencyBytes.withUnsafeMutableBytes { latencyBuffer -> Int32 in
                var params: [UnsafePointer<spa_pod>?] = [
                    mr_pw_audio_format(
                        formatBuffer.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt32(formatBuffer.count),
                        options.format.encoding == .pcmF32LE ? 1 : 0, UInt32(options.format.sampleRate), UInt32(options.format.channels)),
                    mr_pw_port_latency(
                        latencyBuffer.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt32(latencyBuffer.count),
                        options.latencyMicroseconds &* 1_000),
                ]
                return params.withUnsafeMutableBufferPointer { params in
                    api.stream_connect(
                        stream, SPA_DIRECTION_INPUT, UInt32.max /* PW_ID_ANY */,
                        pw_stream_flags(PW_STREAM_FLAG_MAP_BUFFERS.rawValue | PW_STREAM_FLAG_RT_PROCESS.rawValue),
                        params.baseAddress, UInt32(params.count))
                }
            }
        }
        guard connected >= 0 else {
            api.stream_destroy(stream)
            if connected == -EHOSTDOWN || connected == -ECONNREFUSED || connected == -ENOENT {
                if !options.retrying {
                    let directory = getenv("XDG_RUNTIME_DIR").map { String(cString: $0) } ?? "unset"
                    printError("PipeWire is not running (XDG_RUNTIME_DIR \(directory)): no sink node for \(options.deviceName)")
                }
                return exitUnavailable
            }
            printError("PipeWire: the stream did not connect (\(String(cString: strerror(-connected))))")
            return 1
        }
        _ = mr_pw_watch_readable(loop, wake[0], { data, _, _ in
            Unmanaged<SinkState>.fromOpaque(data!).takeUnretainedValue().woken()
        }, context)
        for signal in [SIGTERM, SIGINT] {
            mr_pw_quit_on_signal(loop, signal, { data, _ in Unmanaged<SinkState>.fromOpaque(data!).takeUnretainedValue().quit() }, context)
        }
        printError(
            "PipeWire sink node \(nodeName(for: options.deviceName)) for \(options.deviceName) (\(options.format.name), quantum \(latency), route latency \(options.latencyMicroseconds / 1_000) ms)")
        _ = api.main_loop_run(mainLoop)
        state.quitting.store(true, ordering: .relaxed)
        api.stream_destroy(stream)
        api.main_loop_destroy(mainLoop)
        state.releaseAudio()
        return state.lost.load(ordering: .relaxed) ? exitPipeWireLost : 0
    }

    /// The process ends with the daemon that started it, even one that was killed.
    static func dieWithParent() -> Int32 { mr_die_with_parent() }

    /// SIGTERM and SIGINT reach PipeWire's loop through its signal source (a signalfd): blocked in
    /// every thread from here on, PipeWire's data thread and Swift's pool included.
    static func blockQuitSignals() {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
    }

    static func printError(_ line: String) {
        var text = line + "\n"
        text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
    }
}

/// What PipeWire's callbacks reach. `process` runs on PipeWire's data thread; the state
/// callback, `woken` and `quit` on its main loop (the process's main thread); acquisition
/// runs in a Swift task. They share only atomics and the wake-up pipe.
final class SinkState: @unchecked Sendable {
    // Safe: `options`, `mainLoop` and `wake` never change; `stream` is set on the main loop's
    // thread before the stream connects, so before any callback can read it; the rest is atomic.
    let options: PipeWireSink.Options
    let mainLoop: OpaquePointer
    let wake: [Int32]
    var stream: OpaquePointer?
    /// The route's socket, -1 while none is acquired.
    let descriptor = Atomic<Int32>(-1)
    /// Something plays to the node and no socket is acquired: the main loop asks for one.
    let wanted = Atomic<Bool>(false)
    let acquiring = Atomic<Bool>(false)
    let dropped = Atomic<UInt64>(0)
    /// The rest of a frame a short send cut (at most 7 bytes, in send order from the lowest
    /// byte: the boxes are little-endian) and its length: sent before anything else, so the route's frames stay aligned.
    /// Touched by the data thread only; atomics because the class is shared.
    let tail = Atomic<UInt64>(0)
    let tailCount = Atomic<Int>(0)
    /// The loop is ending at our request (a signal): the stream's going is not a loss.
    let quitting = Atomic<Bool>(false)
    /// PipeWire went away under the node.
    let lost = Atomic<Bool>(false)
    /// The node's quantum, in frames.
    static let quantumFrames = 1024
    /// Bytes of silence in a row, and how many release the route (2 s).
    let silence = Atomic<UInt64>(0)
    let releaseAfterSilentBytes: UInt64
    /// The bus connection the route's audio was acquired on: kept, since the daemon ends a
    /// client's delivery when the client leaves the bus.
    let connection = Mutex<DBusConnection?>(nil)

    init(options: PipeWireSink.Options, mainLoop: OpaquePointer, wake: [Int32]) {
        self.options = options
        self.mainLoop = mainLoop
        self.wake = wake
        releaseAfterSilentBytes = UInt64(2 * options.format.sampleRate * (options.format.bytesPerFrame ?? 8))
    }

    /// One quantum from the graph, to the route's socket without waiting (the daemon paces
    /// by the device; what does not fit is dropped and counted).
    func process() {
        guard let stream, let buffer = mr_pw()!.pointee.stream_dequeue_buffer(stream) else { return }
        var size: UInt32 = 0
        if let bytes = mr_pw_buffer_bytes(buffer, &size), size > 0 {
            let fd = descriptor.load(ordering: .acquiring)
            let silent = UnsafeRawBufferPointer(start: bytes, count: Int(size)).allSatisfy { $0 == 0 }
            // An idle graph still runs the node with silence: that neither acquires the route
            // (so apps can acquire it directly) nor keeps it for long.
            let silentBytes = silent ? silence.add(UInt64(size), ordering: .relaxed).newValue : { silence.store(0, ordering: .relaxed); return 0 }()
            if fd >= 0, silentBytes > releaseAfterSilentBytes {
                if descriptor.compareExchange(expected: fd, desired: -1, ordering: .acquiringAndReleasing).exchanged { close(fd) }
            } else if fd >= 0, sendTail(fd) {
                let sent = send(fd, bytes, Int(size), Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
                if sent < 0, errno == EPIPE || errno == ECONNRESET {
                    // Delivery ended under the node (another writer took the route): ask again.
                    if descriptor.compareExchange(expected: fd, desired: -1, ordering: .acquiringAndReleasing).exchanged { close(fd) }
                    wantAudio()
                } else if sent < Int(size) {
                    // A full socket took part of the quantum. What it took may end inside a frame:
                    // the frame's rest is kept for the next send, the rest of the quantum dropped
                    // (cutting a frame shifted every sample after it: noise, with both cores busy).
                    let taken = max(0, sent)
                    let bytesPerFrame = options.format.bytesPerFrame ?? 1
                    let cut = taken % bytesPerFrame == 0 ? 0 : bytesPerFrame - taken % bytesPerFrame
                    var word: UInt64 = 0
                    for index in 0..<cut { word |= UInt64(bytes[taken + index]) << (8 * UInt64(index)) }
                    tail.store(word, ordering: .relaxed)
                    tailCount.store(cut, ordering: .relaxed)
                    dropped.add(UInt64(Int(size) - taken - cut), ordering: .relaxed)
                }
            } else if fd >= 0 {
                dropped.add(UInt64(size), ordering: .relaxed)  // the frame's rest did not fit yet: the quantum waits for none
            } else if !silent {
                wantAudio()
            }
        }
        _ = mr_pw()!.pointee.stream_queue_buffer(stream, buffer)
    }

    /// Sends the rest of a cut frame first; false while some of it still does not fit.
    private func sendTail(_ fd: Int32) -> Bool {
        let count = tailCount.load(ordering: .relaxed)
        guard count > 0 else { return true }
        var word = tail.load(ordering: .relaxed)
        let sent = withUnsafeBytes(of: &word) { send(fd, $0.baseAddress!, count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
        guard sent > 0 else { return false }
        tail.store(sent >= 8 ? 0 : word >> (8 * UInt64(sent)), ordering: .relaxed)
        tailCount.store(count - sent, ordering: .relaxed)
        return sent == count
    }

    /// Asks the main loop to acquire the route's audio (once until it is done).
    func wantAudio() {
        guard descriptor.load(ordering: .relaxed) < 0, !wanted.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var one: UInt8 = 1
        _ = write(wake[1], &one, 1)
    }

    /// On the main loop: the wake-up pipe has bytes.
    func woken() {
        var scratch = [UInt8](repeating: 0, count: 64)
        while read(wake[0], &scratch, scratch.count) > 0 {}
        guard wanted.load(ordering: .acquiring), !acquiring.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Task { await self.acquire() }
    }

    private func acquire() async {
        defer {
            acquiring.store(false, ordering: .releasing)
            wanted.store(false, ordering: .releasing)
        }
        do {
            let bus: DBusConnection.Bus = options.bus == "system" ? .system : options.bus == "session" ? .session : .address(options.bus)
            let connection: DBusConnection
            if let kept = self.connection.withLock({ $0 }) {
                connection = kept
            } else {
                connection = try await DBusConnection.connect(to: bus)
                self.connection.withLock { $0 = connection }
            }
            let call = Session1.Call.acquireAudio(options.format)
            let reply = try await connection.call(
                destination: DaemonNames.busName, path: options.session, interface: Session1.interface, member: call.member, call.arguments)
            let acquisition = try Session1.AudioReply.acquisition(from: reply)
            _ = fcntl(acquisition.descriptor, F_SETFL, fcntl(acquisition.descriptor, F_GETFL) | O_NONBLOCK)
            // The graph hands a whole quantum at once, more than the smallest socket takes: room for
            // eight quanta asked (Linux doubles it: about 340 ms of F32 stereo at 48 kHz). In steady
            // state the daemon keeps about a quantum queued, or a batch for a URL device (100 ms);
            // the rest rides out a late tick instead of dropping quanta (with both cores busy,
            // four were too few for batches).
            var room = Int32(8 * Self.quantumFrames * (options.format.bytesPerFrame ?? 8))
            _ = setsockopt(acquisition.descriptor, SOL_SOCKET, SO_SNDBUF, &room, socklen_t(MemoryLayout<Int32>.size))
            tailCount.store(0, ordering: .relaxed)  // a cut frame belongs to the socket it was cut on
            let previous = descriptor.exchange(acquisition.descriptor, ordering: .acquiringAndReleasing)
            if previous >= 0 { close(previous) }
        } catch {
            PipeWireSink.printError("no real-time audio for \(options.deviceName): \(error)")
        }
    }

    /// PipeWire paused the node: the route's audio is released (what was sent plays out).
    /// What a full socket made the node drop is said once here, off the data thread.
    func releaseAudio() {
        let fd = descriptor.exchange(-1, ordering: .acquiringAndReleasing)
        if fd >= 0 { close(fd) }
        let lost = dropped.exchange(0, ordering: .relaxed)
        if lost > 0 {
            let frames = lost / UInt64(max(1, options.format.bytesPerFrame ?? 1))
            PipeWireSink.printError("\(options.deviceName): \(frames) frames dropped (the route's socket was full: the daemon read late)")
        }
    }

    func quit() {
        quitting.store(true, ordering: .relaxed)
        _ = mr_pw()!.pointee.main_loop_quit(mainLoop)
    }
}
