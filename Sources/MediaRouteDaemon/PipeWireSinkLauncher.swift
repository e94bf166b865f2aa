#if canImport(Glibc)
import Glibc
#endif
import IOReactor
import Logging
import MediaDevice
import RouteSystem

/// Starts `mediarouted pipewire-sink` for each route that takes real-time audio and stops it
/// with the route (`[audio] pipewire = yes`).
///
/// The sink is a process of its own so that libpipewire is never loaded into the idle daemon;
/// it acquires the route's audio over D-Bus like any other app. Its exit is followed on the
/// I/O reactor (a pidfd): no thread waits for it. A sink that finds no PipeWire says so in one
/// line and exits 69; it is not started again for that route.
actor PipeWireSinkLauncher {
    private let executable: String
    private let bus: String
    private let runtimeDirectory: String?
    private let logger: Logger
    private var running: [String: pid_t] = [:]

    init(bus: String, runtimeDirectory: String?, logger: Logger) {
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

    /// Starts the sink for a route (session path as the daemon exports it).
    func start(session: String, id: String, deviceName: String, format: SampleBuffer.Format) {
        guard running[id] == nil else { return }
        let arguments = [executable, "pipewire-sink", "--bus", bus, "--session", session, "--device", deviceName, "--format", format.name]
        var environment = ProcessEnvironment.current
        if let runtimeDirectory { environment["XDG_RUNTIME_DIR"] = runtimeDirectory }
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        // The daemon's threads block signals and its lifecycle ignores SIGTERM: the sink starts
        // with both at their defaults, or the daemon's SIGTERM would never reach it.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var pid: pid_t = 0
        let status = posix_spawn(&pid, executable, nil, &attributes, argv, envp)
        guard status == 0 else {
            logger.warning("PipeWire sink not started", metadata: ["device": "\(deviceName)", "errno": "\(status)"])
            return
        }
        let child = pid
        running[id] = child
        logger.info("PipeWire sink started", metadata: ["device": "\(deviceName)", "pid": "\(pid)"])
        let logger = self.logger
        do {
            try IOReactor.shared.reap(child) { status in
                Task { await self.exited(id, pid: child) }
                let code = (status >> 8) & 0xFF
                // 69: no PipeWire, which the sink said in its own line.
                if status & 0x7F == 0, code != 0, code != 69 {
                    logger.notice("PipeWire sink ended", metadata: ["device": "\(deviceName)", "exit": "\(code)"])
                }
            }
        } catch {
            logger.warning("PipeWire sink exit not followed: \(error)")
        }
    }

    private func exited(_ id: String, pid: pid_t) {
        if running[id] == pid { running[id] = nil }
    }

    /// Stops a route's sink (SIGTERM: it removes its node and exits).
    func stop(id: String) {
        guard let pid = running.removeValue(forKey: id) else { return }
        kill(pid, SIGTERM)
    }

    func stopAll() {
        for id in Array(running.keys) { stop(id: id) }
    }
}

/// The process's environment as a dictionary (FoundationEssentials has no ProcessInfo environment here).
enum ProcessEnvironment {
    static var current: [String: String] {
        var result: [String: String] = [:]
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(decoding: UnsafeRawBufferPointer(start: entry, count: strlen(entry)), as: UTF8.self)
            if let equals = text.firstIndex(of: "=") { result[String(text[..<equals])] = String(text[text.index(after: equals)...]) }
            pointer += 1
        }
        return result
    }
}
