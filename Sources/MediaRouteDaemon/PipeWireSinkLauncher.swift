#if PipeWire
#if canImport(Glibc)
import Glibc
#endif
import IOReactor
import Logging
import MediaClock
import MediaDevice
import RoutingModel
import PipeWireSink
import RouteSystem
import DBus

/// Starts `mediarouted pipewire-sink` for each route that takes real-time audio, and
/// `mediarouted pipewire-video-sink` for each that shows real-time video, and stops them with
/// the route (`[audio] pipewire`, `[video] pipewire`).
///
/// The sink is a process of its own so that libpipewire is never loaded into the idle daemon;
/// it acquires the route's audio over D-Bus like any other app. Its exit is followed on the
/// I/O reactor (a pidfd): no thread waits for it. A sink that finds no PipeWire says so in one
/// line and exits 69; it is not started again for that route. A sink whose PipeWire went away
/// (restarted, or stopped) exits 75 and is started again, quietly, with a growing pause
/// (``retryDelays``) until PipeWire is back or the route ends: the node comes back by itself.
///
/// A sink ends with the thread that started it (its `PR_SET_PDEATHSIG` follows the parent
/// thread, not the process): the process running this actor must keep its pool threads for
/// its whole life, as `QuietExecutors` does (libdispatch's pool ends idle threads, and the
/// sinks a session helper started on one went away five seconds later).
actor PipeWireSinkLauncher {
    /// What a sink process publishes: a route's audio node or its video node.
    private enum Node {
        case audio(PipeWireSink.Options)
        case video(PipeWireVideoSink.Options)

        /// `mediarouted` and what follows it.
        var arguments: [String] {
            switch self {
            case .audio(let options): ["pipewire-sink"] + options.arguments
            case .video(let options): ["pipewire-video-sink"] + options.arguments
            }
        }

        var deviceName: String {
            switch self {
            case .audio(let options): options.deviceName
            case .video(let options): options.deviceName
            }
        }

        var retrying: Bool {
            get {
                switch self {
                case .audio(let options): options.retrying
                case .video(let options): options.retrying
                }
            }
            set {
                switch self {
                case .audio(var options):
                    options.retrying = newValue
                    self = .audio(options)
                case .video(var options):
                    options.retrying = newValue
                    self = .video(options)
                }
            }
        }
    }

    /// A route's sink: how to start it again, and the process running now (nil between tries).
    private struct Sink {
        var options: Node
        var pid: pid_t?
        var retries = 0
        var retry: Task<Void, Never>?
    }

    /// Where a system-wide PipeWire listens (PipeWire's system unit: `RuntimeDirectory=pipewire`).
    static let systemRuntimeDirectory = "/run/pipewire"

    /// Whether a PipeWire socket (`pipewire-0`, PipeWire's default name) is in `directory`.
    static func socketExists(in directory: String) -> Bool {
        var status = stat()
        return stat(directory + "/pipewire-0", &status) == 0 && status.st_mode & S_IFMT == S_IFSOCK
    }

    /// The pauses before each new try while PipeWire is away; the last repeats.
    static let retryDelays: [Duration] = [.milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(5)]

    private let executable: String
    private let bus: String
    private let runtimeDirectory: String?
    private let logger: Logger
    private var sinks: [String: Sink] = [:]

    /// What the relaunch delays run on.
    private let clock: any HostClock

    init(bus: String, runtimeDirectory: String?, clock: any HostClock = SystemHostClock(), logger: Logger) {
        self.clock = clock
        var path = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &path, path.count - 1)
        executable = length > 0 ? String(decoding: path[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) : CommandLine.arguments[0]
        self.bus = bus
        self.runtimeDirectory = runtimeDirectory
        self.logger = logger
    }

    /// The format the sink asks for: float at 48 kHz in stereo where the route takes them
    /// (PipeWire's own), else the nearest the route takes.
    static func format(for support: RealtimeAudioSupport) -> SampleBuffer.Format? {
        let encoding: SampleBuffer.Format.Encoding = support.encodings.contains(.pcmF32LE) ? .pcmF32LE : .pcmS16LE
        guard support.encodings.contains(encoding) else { return nil }
        let rate = support.sampleRates.contains(48_000) ? 48_000 : support.sampleRates.max() ?? 48_000
        let channels = min(2, support.channels.upperBound)
        return SampleBuffer.Format(encoding: encoding, sampleRate: rate, channels: channels)
    }

    /// Starts the sink for a route (session path as the daemon exports it); its node publishes `latency`.
    func start(session: String, id: String, deviceName: String, format: SampleBuffer.Format, latency: Duration) {
        guard sinks[id] == nil, let path = DBusObjectPath(session) else { return }
        sinks[id] = Sink(options: .audio(PipeWireSink.Options(bus: bus, session: path, deviceName: deviceName, format: format, latency: latency)))
        launch(id)
    }

    /// Starts the video sink for a route that shows real-time video (its node `mediaroute.<device>.video`).
    func startVideo(session: String, id: String, deviceName: String) {
        let key = Self.videoKey(id)
        guard sinks[key] == nil, let path = DBusObjectPath(session) else { return }
        sinks[key] = Sink(options: .video(PipeWireVideoSink.Options(bus: bus, session: path, deviceName: deviceName)))
        launch(key)
    }

    /// A route's video sink, beside its audio sink under the route's id.
    private static func videoKey(_ id: String) -> String { id + "/video" }

    private func launch(_ id: String) {
        guard let sink = sinks[id] else { return }
        let arguments = [executable] + sink.options.arguments
        var environment = processEnvironment
        if let runtimeDirectory { environment["XDG_RUNTIME_DIR"] = runtimeDirectory }
        let deviceName = sink.options.deviceName
        let pid: pid_t
        do {
            pid = try spawnProcess(arguments, environment: environment, output: .inherited)
        } catch {
            logger.warning("PipeWire sink not started", metadata: ["device": "\(deviceName)", "error": "\(error)"])
            sinks[id] = nil
            return
        }
        sinks[id]?.pid = pid
        if !sink.options.retrying { logger.info("PipeWire sink started", metadata: ["device": "\(deviceName)", "pid": "\(pid)"]) }
        do {
            try IOReactor.shared.reap(pid) { status in
                Task { await self.exited(id, pid: pid, status: status) }
            }
        } catch {
            logger.warning("PipeWire sink exit not followed: \(error)")
        }
    }

    private func exited(_ id: String, pid: pid_t, status: Int32) {
        logger.debug("PipeWire sink exited", metadata: ["pid": "\(pid)", "status": "\(status)"])
        guard var sink = sinks[id], sink.pid == pid else { return }  // stopped with its route
        sink.pid = nil
        let signalled = status & 0x7F != 0
        let code = (status >> 8) & 0xFF
        let lost = !signalled && code == PipeWireSink.exitPipeWireLost
        let stillAway = !signalled && code == PipeWireSink.exitUnavailable && sink.options.retrying
        guard lost || stillAway else {
            // 69 on the first start: no PipeWire, which the sink said in its own line.
            if signalled || (code != 0 && code != PipeWireSink.exitUnavailable) {
                logger.notice("PipeWire sink ended", metadata: ["device": "\(sink.options.deviceName)", "status": "\(status)"])
            }
            sinks[id] = nil
            return
        }
        if lost {
            if !sink.options.retrying || sink.retries > 0 {
                logger.notice("PipeWire went away: the sink node comes back with it", metadata: ["device": "\(sink.options.deviceName)"])
            }
            sink.retries = 0
        }
        let delay = Self.retryDelays[min(sink.retries, Self.retryDelays.count - 1)]
        sink.retries += 1
        sink.options.retrying = true
        sink.retry = Task { [clock] in
            try? await clock.sleep(for: delay)
            guard !Task.isCancelled else { return }
            self.launch(id)
        }
        sinks[id] = sink
    }

    /// Stops a route's sinks, audio and video (SIGTERM: each removes its node and exits), or their next try.
    func stop(id: String) {
        for key in [id, Self.videoKey(id)] {
            guard let sink = sinks.removeValue(forKey: key) else { continue }
            logger.info("PipeWire sink stopped: its route ended", metadata: ["device": "\(sink.options.deviceName)"])
            sink.retry?.cancel()
            if let pid = sink.pid { kill(pid, SIGTERM) }
        }
    }

    func stopAll() {
        for id in Array(sinks.keys) where sinks[id] != nil { stop(id: id) }
    }
}
#endif
