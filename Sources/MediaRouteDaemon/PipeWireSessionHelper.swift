#if PipeWire
#if canImport(Glibc)
import Glibc
#endif
import DBus
public import Logging
import MediaDevice
import MediaRouteBusAPI
public import ServiceLifecycle

/// `mediarouted pipewire-session`: the PipeWire sink nodes of the daemon's routes in a user's
/// session PipeWire (the user unit `mediaroute-pipewire.service`, started with PipeWire).
///
/// Debian's PipeWire runs in each user's session, under `/run/user/UID`, which the daemon's
/// unit hides (`ProtectHome=tmpfs`) and which belongs to that user anyway; so the session
/// helps itself. It follows the daemon's routes over the system bus; each route whose
/// `Session1.SinkNode` is `session` gets a node here, by the same `mediarouted pipewire-sink`
/// process the daemon starts for a system-wide PipeWire, which acquires the route's audio
/// like any app; each whose `Session1.VideoSinkNode` is `session` gets a video node
/// (`mediarouted pipewire-video-sink`). The daemon lets a user do that only from an active seat session (logind),
/// as logind grants the seat's user the sound card (Docs/audio.md).
///
/// Nothing wakes it while no route comes or goes: it waits on the bus.
public struct PipeWireSessionHelper: Service {
    private let bus: DBusConnection.Bus
    private let busArgument: String
    private let daemon: String
    private let logger: Logger

    /// A helper for the daemon `daemon` on `bus` (`system`, `session` or an address).
    public init(bus: String, daemon: String = "org.mediaroute", logger: Logger) {
        self.busArgument = bus
        self.bus = bus == "system" ? .system : bus == "session" ? .session : .address(bus)
        self.daemon = daemon
        self.logger = logger
    }

    /// The session's PipeWire socket directory (`PIPEWIRE_RUNTIME_DIR`, else `XDG_RUNTIME_DIR`),
    /// if a PipeWire socket is there.
    public static func sessionPipeWire() -> String? {
        for name in ["PIPEWIRE_RUNTIME_DIR", "XDG_RUNTIME_DIR"] {
            if let directory = getenv(name).map({ String(cString: $0) }), !directory.isEmpty {
                return PipeWireSinkLauncher.socketExists(in: directory) ? directory : nil
            }
        }
        return nil
    }

    public func run() async throws {
        guard Self.sessionPipeWire() != nil else {
            logger.notice("no PipeWire in this session (no pipewire-0 in PIPEWIRE_RUNTIME_DIR or XDG_RUNTIME_DIR): no sink nodes here")
            return
        }
        let connection = try await DBusConnection.connect(to: bus)
        let follower = SessionRoutes(
            connection: connection, daemon: daemon,
            launcher: PipeWireSinkLauncher(bus: busArgument, runtimeDirectory: nil, logger: logger), logger: logger)
        let signals = try await connection.signals(matchingAny: [
            DBusMatchRule(sender: daemon, path: DaemonNames.root, interface: "org.freedesktop.DBus.ObjectManager"),
            DBusMatchRule(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged", arg0: daemon),
        ])
        await follower.catchUp()
        logger.info("following mediarouted's routes for this session's PipeWire")
        await withGracefulShutdownHandler {
            for await signal in signals.cancelOnGracefulShutdown() {
                await follower.handle(signal)
            }
        } onGracefulShutdown: {
            Task { await follower.stopAll() }
        }
        await follower.stopAll()
    }
}

/// The routes the helper publishes nodes for, by session path.
private actor SessionRoutes {
    let connection: DBusConnection
    let daemon: String
    let launcher: PipeWireSinkLauncher
    let logger: Logger
    /// Device names by object path, as the daemon published them (a node is named after its device).
    private var deviceNames: [DBusObjectPath: String] = [:]
    /// Routes with a node (session paths); bounded by the daemon's own route limit.
    private var published: Set<DBusObjectPath> = []

    init(connection: DBusConnection, daemon: String, launcher: PipeWireSinkLauncher, logger: Logger) {
        self.connection = connection
        self.daemon = daemon
        self.launcher = launcher
        self.logger = logger
    }

    /// Everything the daemon has now (at start, and when it comes back).
    func catchUp() async {
        guard let objects = try? await connection.call(
            destination: daemon, path: DaemonNames.root, interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects")
        else { return }  // not running: its name appearing brings us here again
        let managed = objects.first?.dictionary ?? [:]
        for (key, interfaces) in managed {
            if let path = DBusObjectPath(key), let name = interfaces.dictionary?[Device1.interface]?.dictionary?["Name"]?.string {
                deviceNames[path] = name
            }
        }
        for (key, interfaces) in managed {
            guard let path = DBusObjectPath(key) else { continue }
            await added(path, interfaces: interfaces.dictionary ?? [:])
        }
    }

    func handle(_ signal: DBusMessage) async {
        switch signal.member {
        case "NameOwnerChanged":
            guard signal.body.count == 3 else { return }
            if signal.body[2].string == "" {
                await stopAll()
            } else {
                await catchUp()
            }
        case "InterfacesAdded":
            guard signal.body.count == 2, let path = signal.body[0].objectPath else { return }
            await added(path, interfaces: signal.body[1].dictionary ?? [:])
        case "InterfacesRemoved":
            guard signal.body.count == 2, let path = signal.body[0].objectPath else { return }
            let interfaces = signal.body[1].array?.compactMap(\.string) ?? []
            if interfaces.contains(Device1.interface) { deviceNames[path] = nil }
            if interfaces.contains(Session1.interface), published.remove(path) != nil {
                await launcher.stop(id: path.rawValue)
            }
        default:
            break
        }
    }

    private func added(_ path: DBusObjectPath, interfaces: [String: DBusValue]) async {
        if let name = interfaces[Device1.interface]?.dictionary?["Name"]?.string { deviceNames[path] = name }
        guard let values = interfaces[Session1.interface]?.dictionary, let session = Session1.Properties(values: values),
            session.sinkNode?.publisher == .session || session.videoSinkNode == .session, !published.contains(path)
        else { return }
        var name = deviceNames[session.device]
        if name == nil, let reply = try? await connection.call(
            destination: daemon, path: session.device, interface: "org.freedesktop.DBus.Properties", member: "Get",
            [.string(Device1.interface), .string("Name")])
        {
            name = reply.first?.unwrapped.string
        }
        published.insert(path)
        if session.videoSinkNode == .session {
            await launcher.startVideo(session: path.rawValue, id: path.rawValue, deviceName: name ?? session.deviceID)
        }
        guard let node = session.sinkNode, node.publisher == .session else { return }
        await launcher.start(
            session: path.rawValue, id: path.rawValue, deviceName: name ?? session.deviceID, format: node.format,
            latency: .microseconds(Int64(clamping: node.latencyMicroseconds)))
    }

    func stopAll() async {
        published.removeAll()
        await launcher.stopAll()
    }
}
#endif
