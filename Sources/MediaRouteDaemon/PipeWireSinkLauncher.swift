#if canImport(Glibc)
import Glibc
#endif
import IOReactor
import Logging
import MediaDevice
import PipeWireSink
import RouteSystem
import DBus

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
        guard running[id] == nil, let path = DBusObjectPath(session) else { return }
        let options = PipeWireSink.Options(bus: bus, session: path, deviceName: deviceName, format: format)
        let arguments = [executable, "pipewire-sink"] + options.arguments
        var environment = processEnvironment
        if let runtimeDirectory { environment["XDG_RUNTIME_DIR"] = runtimeDirectory }
        let pid: pid_t
        do {
            pid = try spawnProcess(arguments, environment: environment, output: .inherited)
        } catch {
            logger.warning("PipeWire sink not started", metadata: ["device": "\(deviceName)", "error": "\(error)"])
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
