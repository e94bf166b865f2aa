#if canImport(Glibc)
import Glibc
#endif
public import DBus
import MediaRouteBusAPI
import RoutingModel
import Synchronization

/// A PipeWire video sink node for one route that shows real-time video: what a compositor's
/// screen cast, a camera or a pipeline sends to it is shown on the TV (`Session1.AcquireVideo`),
/// as ``PipeWireSink`` does for audio.
///
/// It runs as `mediarouted pipewire-video-sink …`, started and stopped with the route by the
/// daemon (or `mediarouted pipewire-session` in a user's session), so libpipewire and the
/// picture conversion load only there. The node is `Video/Sink`, named
/// `mediaroute.<device>.video`; the route's video is acquired while something streams into the
/// node (``PipeWireVideoCapture``) and released when it stops, so `mediaroutectl mirror` and
/// other apps can acquire the route directly while the node is idle.
public enum PipeWireVideoSink {
    /// What the daemon passes on the command line.
    public struct Options: Sendable, Hashable {
        public var bus: String
        public var session: DBusObjectPath
        public var deviceName: String
        /// Started again after PipeWire went away: a PipeWire not (yet) back exits 69 without a word.
        public var retrying: Bool

        public init(bus: String, session: DBusObjectPath, deviceName: String, retrying: Bool = false) {
            self.bus = bus
            self.session = session
            self.deviceName = deviceName
            self.retrying = retrying
        }

        /// The arguments after `mediarouted pipewire-video-sink`.
        public var arguments: [String] {
            ["--bus", bus, "--session", session.rawValue, "--device", deviceName] + (retrying ? ["--retrying"] : [])
        }

        /// Options from `arguments`, or why they are not.
        public static func parse(_ arguments: [String]) -> Result<Options, PipeWireSinkError> {
            let values: [String: String]
            let retrying: Bool
            switch PipeWireSink.readOptions(
                arguments, keys: ["--bus", "--session", "--device"],
                usage: "usage: mediarouted pipewire-video-sink --bus ADDRESS --session PATH --device NAME [--retrying]")
            {
            case .failure(let error): return .failure(error)
            case .success(let read): (values, retrying) = read
            }
            guard let bus = values["--bus"], let path = values["--session"].flatMap(DBusObjectPath.init), let device = values["--device"] else {
                return .failure(PipeWireSinkError("pipewire-video-sink needs --bus, --session and --device"))
            }
            return .success(Options(bus: bus, session: path, deviceName: device, retrying: retrying))
        }
    }

    /// The node's name in PipeWire: `mediaroute.<device>.video`, letters and digits kept.
    public static func nodeName(for deviceName: String) -> String {
        PipeWireSink.nodeName(for: deviceName) + ".video"
    }

    /// Publishes the node and runs PipeWire's loop on this thread until SIGTERM or SIGINT.
    /// - Returns: the process's exit status, as ``PipeWireSink/run(_:)``'s.
    public static func run(_ options: Options) -> Int32 {
        _ = PipeWireSink.dieWithParent()
        PipeWireSink.blockQuitSignals()
        let connection = Mutex<DBusConnection?>(nil)
        let capture = PipeWireVideoCapture(
            mode: .sinkNode(deviceName: options.deviceName), quitOnSignals: true,
            acquire: { format in
                // One connection, kept: the daemon ends the video of a client that leaves the bus.
                let bus: DBusConnection.Bus = options.bus == "system" ? .system : options.bus == "session" ? .session : .address(options.bus)
                let current: DBusConnection
                if let kept = connection.withLock({ $0 }) {
                    current = kept
                } else {
                    current = try await DBusConnection.connect(to: bus)
                    connection.withLock { $0 = current }
                }
                let call = Session1.Call.acquireVideo(format)
                let reply = try await current.call(
                    destination: DaemonNames.busName, path: options.session, interface: Session1.interface, member: call.member, call.arguments)
                return try Session1.VideoReply.acquisition(from: reply, format: format).descriptor
            },
            log: { PipeWireSink.printError("\(options.deviceName): \($0)") })
        PipeWireSink.printError("PipeWire video sink node \(nodeName(for: options.deviceName)) for \(options.deviceName)")
        return capture.run(retrying: options.retrying)
    }
}
