#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DBus
import Logging
import MediaClock
import MediaDevice
import MediaRouteBusAPI
import RouteSystem
import SystemRouting

/// `SystemRouting`'s backend for apps in another process than `mediarouted`:
/// the same `SystemRouteController` API, carried over D-Bus.
///
/// It mirrors the daemon's objects (devices, sessions) from the ObjectManager and
/// its signals, turns them into the routing system's events, answers pairing
/// prompts through an exported `org.mediaroute.PairingAgent1`, and reports the
/// daemon leaving the bus as every route ending with `connectionFailed`.
public actor DaemonRoutingBackend: SystemRoutingBackend {
    private let connection: DBusConnection
    private let daemon: String
    private let clock: any HostClock
    private let logger: Logger
    private var devices: [DBusObjectPath: SystemDevice] = [:]
    private var routes: [UUID: (route: ActiveRoute, path: DBusObjectPath)] = [:]
    private var controls: [UUID: PlaybackControl] = [:]
    private var observers: [UInt64: AsyncStream<RouteSystemEvent>.Continuation] = [:]
    private var nextObserver: UInt64 = 0
    private var discoveryCount = 0
    private var agent: (any PairingAgent)?
    private var tasks: [Task<Void, Never>] = []
    private var daemonGone = false
    /// The daemon's `Manager1.DiscoveryFailures` as last seen (protocol id → reason).
    private var discoveryFailures: [String: String] = [:]

    /// Where the client exports its pairing agent.
    static let agentPath: DBusObjectPath = "/org/mediaroute/client/agent"

    /// Connects to the daemon on `connection`'s bus.
    /// - Throws: ``MediaDeviceError/Code/connectionFailed`` when no daemon owns the name.
    public static func connect(
        _ connection: DBusConnection, daemon: String = DaemonNames.busName,
        clock: any HostClock = SystemHostClock(), logger: Logger = Logger(label: "mediaroute.client")
    ) async throws -> DaemonRoutingBackend {
        guard (try? await connection.nameOwner(of: daemon)) ?? nil != nil else {
            throw MediaDeviceError(.connectionFailed, "mediarouted is not running (no owner of \(daemon) on the bus)")
        }
        let backend = DaemonRoutingBackend(connection: connection, daemon: daemon, clock: clock, logger: logger)
        try await backend.start()
        return backend
    }

    private init(connection: DBusConnection, daemon: String, clock: any HostClock, logger: Logger) {
        self.connection = connection
        self.daemon = daemon
        self.clock = clock
        self.logger = logger
    }

    private func start() async throws {
        // One stream, so the daemon's last signals (routes ending) come before its leaving.
        let signals = try await connection.signals(matchingAny: [
            DBusMatchRule(sender: daemon, pathNamespace: DaemonNames.root),
            DBusMatchRule(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged", arg0: daemon),
        ])
        tasks.append(Task { [weak self] in
            for await signal in signals {
                if signal.member == "NameOwnerChanged" {
                    if signal.body.count == 3, signal.body[2].string == "" { await self?.daemonLeft() }
                } else {
                    await self?.handle(signal)
                }
            }
        })
        let objects = try await connection.call(
            destination: daemon, path: DaemonNames.root, interface: "org.freedesktop.DBus.ObjectManager",
            member: "GetManagedObjects")
        // Devices first: a session object refers to its device.
        let managed = (objects.first?.dictionary ?? [:]).sorted { lhs, rhs in
            (lhs.value.dictionary?[DaemonNames.device] != nil ? 0 : 1, lhs.key) < (rhs.value.dictionary?[DaemonNames.device] != nil ? 0 : 1, rhs.key)
        }
        for (key, interfaces) in managed {
            guard let path = DBusObjectPath(key) else { continue }
            await added(path, interfaces: interfaces.dictionary ?? [:], announce: false)
        }
    }

    /// Stops following the daemon and withdraws this client's discovery interest.
    public func close() async {
        for task in tasks { task.cancel() }
        tasks.removeAll()
        for observer in observers.values { observer.finish() }
        observers.removeAll()
    }

    // MARK: Events

    public func events() -> AsyncStream<RouteSystemEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: RouteSystemEvent.self)
        nextObserver += 1
        let id = nextObserver
        observers[id] = continuation
        continuation.onTermination = { _ in Task { await self.removeObserver(id) } }
        return stream
    }

    private func removeObserver(_ id: UInt64) { observers[id] = nil }

    private func emit(_ event: RouteSystemEvent) {
        for observer in observers.values { observer.yield(event) }
    }

    public var activeRoutes: [ActiveRoute] { routes.values.map(\.route) }

    public var devicesList: [SystemDevice] {
        devices.values.sorted { $0.displayName < $1.displayName }
    }

    // MARK: Calls

    private func call(_ path: DBusObjectPath, _ interface: String, _ member: String, _ args: [DBusValue] = [],
                      timeout: Duration = .seconds(25)) async throws -> [DBusValue] {
        if daemonGone { throw MediaDeviceError(.connectionFailed, "mediarouted left the bus") }
        do {
            return try await connection.call(destination: daemon, path: path, interface: interface, member: member, args, timeout: timeout)
        } catch {
            throw MediaDeviceError(dbusError: error)
        }
    }

    public func setPairingAgent(_ agent: (any PairingAgent)?) async {
        self.agent = agent
        if agent != nil {
            await connection.export(pairingAgentObject(), at: Self.agentPath)
            _ = try? await call(DaemonNames.root, DaemonNames.manager, "RegisterPairingAgent", [.objectPath(Self.agentPath)])
        } else {
            _ = try? await call(DaemonNames.root, DaemonNames.manager, "UnregisterPairingAgent", [.objectPath(Self.agentPath)])
            connection.unexport(Self.agentPath)
        }
    }

    private func pairingAgentObject() -> DBusObject {
        DBusObject(interfaces: [DBusInterface(DaemonNames.pairingAgent, methods: [
            DBusMethod("RequestPairingCode", inputs: [
                DBusArgument("device", "o"), DBusArgument("name", "s"), DBusArgument("reason", "s"),
                DBusArgument("method", "s"), DBusArgument("length", "u"),
            ], outputs: [DBusArgument("code", "s")]) { [weak self] call in
                guard let self, let code = await self.answerPairing(call.arguments) else {
                    throw DBusError(name: DaemonNames.errorPrefix + "Canceled", message: "the person cancelled")
                }
                return [.string(code)]
            },
        ])])
    }

    private func answerPairing(_ args: [DBusValue]) async -> String? {
        guard let agent, args.count == 5, let path = args[0].objectPath,
            let name = args[1].string, let reason = args[2].string
        else { return nil }
        let method: MediaOutputDevice.AuthorizationMethod = switch (args[3].string, args[4].integer) {
        case ("numeric", 6): .numericCode(length: .sixCharacter)
        case ("numeric", _): .numericCode(length: .fourCharacter)
        case ("password", _): .password
        default: .none
        }
        let entry = devices[path]
        guard let member = entry?.members.first,
            let device = MediaOutputDevice(id: member.device.id, displayName: name, capabilities: member.device.capabilities,
                                           deviceType: member.device.deviceType)
        else { return nil }
        let request = PairingRequest(
            device: device, protocolType: member.protocolType, session: MediaOutputSession(deviceID: device.id),
            reason: reason, authorizationMethod: method)
        return await agent.pairingCode(for: request)
    }

    public func activate(deviceID: String, protocolID: String?, features: MediaOutputDevice.Capabilities) async throws -> ActiveRoute {
        guard let (path, _) = devices.first(where: { $0.value.id == deviceID || $0.value.displayName.lowercased() == deviceID.lowercased() }) else {
            throw MediaDeviceError(.deviceNotFound, "no device \(deviceID)")
        }
        let reply = try await call(path, DaemonNames.device, "Activate", [.string(protocolID ?? "")], timeout: .seconds(300))
        guard let sessionPath = reply.first?.objectPath else { throw MediaDeviceError(.connectionFailed, "no session path") }
        if let known = routes.values.first(where: { $0.path == sessionPath }) { return known.route }
        let properties = try await call(sessionPath, "org.freedesktop.DBus.Properties", "GetAll", [.string(DaemonNames.session)])
        guard let route = makeRoute(properties.first?.dictionary ?? [:]) else {
            throw MediaDeviceError(.connectionFailed, "the daemon described the session oddly")
        }
        if routes[route.session.id] == nil {
            routes[route.session.id] = (route, sessionPath)
            emit(.routeActivated(route))
        }
        return route
    }

    public func deactivate(_ session: MediaOutputSession) async {
        guard let route = routes[session.id], let device = devicePath(for: route.route) else { return }
        _ = try? await call(device, DaemonNames.device, "Deactivate")
    }

    public func beginDiscovery(client: String) async {
        discoveryCount += 1
        if discoveryCount == 1 { _ = try? await call(DaemonNames.root, DaemonNames.manager, "StartDiscovery") }
    }

    public func endDiscovery(client: String) async {
        guard discoveryCount > 0 else { return }
        discoveryCount -= 1
        if discoveryCount == 0 { _ = try? await call(DaemonNames.root, DaemonNames.manager, "StopDiscovery") }
    }

    private func devicePath(for route: ActiveRoute) -> DBusObjectPath? {
        devices.first { $0.value.members.contains { $0.key == route.key } }?.key
    }

    private func routeDevice(_ session: MediaOutputSession) throws -> DBusObjectPath {
        guard let route = routes[session.id], let path = devicePath(for: route.route) else {
            throw MediaDeviceError(.deviceNotActive, "\(session) is not active")
        }
        return path
    }

    private func sessionPath(_ session: MediaOutputSession) throws -> DBusObjectPath {
        guard let route = routes[session.id] else { throw MediaDeviceError(.deviceNotActive, "\(session) is not active") }
        return route.path
    }

    public func setVolume(_ level: Float, on session: MediaOutputSession) async throws {
        _ = try await call(try routeDevice(session), DaemonNames.device, "SetVolume", [.double(Double(level))])
    }

    public func changeVolume(by increments: Int, on session: MediaOutputSession) async throws {
        _ = try await call(try routeDevice(session), DaemonNames.device, "ChangeVolume", [.int32(Int32(clamping: increments))])
    }

    public func setMuted(_ muted: Bool, on session: MediaOutputSession) async throws {
        _ = try await call(try routeDevice(session), DaemonNames.device, "Mute", [.bool(muted)])
    }

    public func volume(on session: MediaOutputSession) async throws -> (volume: Float, muted: Bool) {
        let path = try routeDevice(session)
        let all = try await call(path, "org.freedesktop.DBus.Properties", "GetAll", [.string(DaemonNames.device)]).first?.dictionary ?? [:]
        return (Float(all["Volume"]?.double ?? 0), all["Muted"]?.bool ?? false)
    }

    public func startSession(
        on session: MediaOutputSession, identifier: String?, url: URL, metadata: PlaybackMetadata
    ) async throws -> PlaybackControl {
        let path = try sessionPath(session)
        _ = try await call(
            path, DaemonNames.session, "StartWithMetadata",
            [.string(url.absoluteString), .string(identifier == nil ? "player" : "application"), SessionMetadataCodec.encode(metadata)],
            timeout: .seconds(60))
        let properties = try await call(path, "org.freedesktop.DBus.Properties", "GetAll", [.string(DaemonNames.session)]).first?.dictionary ?? [:]
        let control = PlaybackControl(clock: clock)
        control.update { snapshot in
            Self.apply(properties, to: &snapshot)
            let title = properties["Title"]?.string
            snapshot.metadata = PlaybackMetadata(
                title: title?.isEmpty == false ? title : metadata.title, artist: metadata.artist, album: metadata.album,
                artworkURL: metadata.artworkURL, duration: properties["Duration"]?.double.flatMap { $0 > 0 ? $0 : nil } ?? metadata.duration,
                isLive: metadata.isLive, contentURL: url)
        }
        controls[session.id] = control
        let connection = self.connection
        let daemon = self.daemon
        let devicePath = routes[session.id].flatMap { entry in self.devicePath(for: entry.route) }
        tasks.append(Task {
            // The app's commands, carried to the daemon in order: every one the in-process system takes.
            for await command in control.commands {
                let request: (path: DBusObjectPath?, interface: String, member: String, args: [DBusValue]) = switch command {
                case .play: (path, DaemonNames.session, "Play", [])
                case .pause: (path, DaemonNames.session, "Pause", [])
                case .seek(let position): (path, DaemonNames.session, "Seek", [.double(position)])
                case .setSpeed(let rate): (path, DaemonNames.session, "SetRate", [.double(rate)])
                case .stop: (path, DaemonNames.session, "Stop", [])
                case .setVolume(let level): (devicePath, DaemonNames.device, "SetVolume", [.double(Double(level))])
                case .setMuted(let muted): (devicePath, DaemonNames.device, "Mute", [.bool(muted)])
                case .selectAudible(let option): (path, DaemonNames.session, "SelectAudible", [.string(option?.id ?? "")])
                case .selectLegible(let option): (path, DaemonNames.session, "SelectLegible", [.string(option?.id ?? "")])
                }
                guard let target = request.path else { continue }
                _ = try? await connection.call(
                    destination: daemon, path: target, interface: request.interface, member: request.member, request.args)
            }
        })
        if let route = routes[session.id]?.route { emit(.sessionStarted(route, application: identifier)) }
        return control
    }

    /// A playback command for the URL session the daemon runs on a route, whoever started it
    /// (another process's `mediaroutectl play`): `Session1.Play`, `Pause` or `Seek`.
    public func commandPlayback(_ command: PlaybackCommand, on session: MediaOutputSession) async throws {
        let path = try sessionPath(session)
        switch command {
        case .play: _ = try await call(path, DaemonNames.session, "Play")
        case .pause: _ = try await call(path, DaemonNames.session, "Pause")
        case .seek(let position): _ = try await call(path, DaemonNames.session, "Seek", [.double(position)])
        case .stop: _ = try await call(path, DaemonNames.session, "Stop")
        default: throw MediaDeviceError(.unsupported, "\(command) is not sent through mediarouted")
        }
    }

    /// `Manager1.Suggest`: the route the daemon suggests for `content` from `application`.
    public func suggest(application: String, content: PlaybackContent) async throws -> RouteSuggestion {
        let reply = try await call(DaemonNames.root, DaemonNames.manager, "Suggest",
                                   [.string(application), .bool(content.isVideo), .bool(content.isLongForm)])
        guard reply.count == 3, reply[0].string == "external", let id = reply[1].string, let name = reply[2].string else { return .local }
        return .external(deviceID: id, displayName: name)
    }

    /// `Manager1.RecordRouteChoice`: remembers the person's pick (nil device: played locally).
    public func recordRouteChoice(application: String, content: PlaybackContent, deviceID: String?) async throws {
        _ = try await call(DaemonNames.root, DaemonNames.manager, "RecordRouteChoice",
                           [.string(application), .bool(content.isVideo), .bool(content.isLongForm), .string(deviceID ?? "")])
    }

    public func sessionApplication(on session: MediaOutputSession) async -> String? {
        guard let path = try? sessionPath(session),
            let reply = try? await call(path, "org.freedesktop.DBus.Properties", "Get", [.string(DaemonNames.session), .string("Application")]),
            let application = reply.first?.unwrapped.string, !application.isEmpty
        else { return nil }
        return application
    }

    public func stopSession(on session: MediaOutputSession) async {
        guard let path = try? sessionPath(session) else { return }
        _ = try? await call(path, DaemonNames.session, "Stop")
    }

    public func sendRouteData(_ data: Data, fromApplication application: String, on session: MediaOutputSession) async throws {
        _ = try await call(try sessionPath(session), DaemonNames.session, "SendToExtension", [.bytes(Array(data))])
    }

    public func sendSessionData(_ data: Data, on session: MediaOutputSession) async throws {
        _ = try await call(try sessionPath(session), DaemonNames.session, "Send", [.bytes(Array(data))])
    }

    public func startRealtimeSampleDelivery(on session: MediaOutputSession) async throws -> RealtimeSampleSink {
        throw MediaDeviceError(.unsupported, "real-time samples are not carried over D-Bus; stream in the daemon's process")
    }

    public func stopRealtimeSampleDelivery(on session: MediaOutputSession) async {}

    // MARK: Mirroring the daemon

    private func makeDevice(_ properties: [String: DBusValue]) -> SystemDevice? {
        guard let id = properties["Id"]?.string, let name = properties["Name"]?.string else { return nil }
        let type = MediaOutputDevice.DeviceType(rawValue: properties["Type"]?.string ?? "") ?? .unknown
        var capabilities: MediaOutputDevice.Capabilities = []
        for capability in properties["Capabilities"]?.array?.compactMap(\.string) ?? [] {
            switch capability {
            case "urlPlayback": capabilities.insert(.urlPlayback)
            case "realtimeAudioStreaming": capabilities.insert(.realtimeAudioStreaming)
            case "realtimeVideoStreaming": capabilities.insert(.realtimeVideoStreaming)
            default: break
            }
        }
        let volumeControl = MediaOutputDevice.VolumeControl(rawValue: properties["VolumeControl"]?.string ?? "") ?? .none
        let state = ActivationState(rawValue: properties["State"]?.string ?? "") ?? .idle
        let members = (properties["Members"]?.array ?? []).compactMap { member -> SystemDevice.Member? in
            guard case .structure(let fields) = member.unwrapped, fields.count == 3,
                let protocolID = fields[0].string, let protocolName = fields[1].string, let deviceID = fields[2].string,
                let device = MediaOutputDevice(id: deviceID, displayName: name, capabilities: capabilities, deviceType: type,
                                               volumeControl: volumeControl, canMute: properties["CanMute"]?.bool ?? false,
                                               unavailableReason: properties["Available"]?.bool == false
                                                   ? (properties["UnavailableReason"]?.string ?? "unavailable") : nil)
            else { return nil }
            return SystemDevice.Member(
                protocolType: MediaSharingProtocol(protocolID, displayName: protocolName), device: device, state: state)
        }
        guard !members.isEmpty else { return nil }
        return SystemDevice(id: id, displayName: name, members: members)
    }

    private func makeRoute(_ properties: [String: DBusValue]) -> ActiveRoute? {
        guard let idText = properties["Id"]?.string, let id = UUID(uuidString: idText),
            let deviceID = properties["DeviceId"]?.string, let protocolID = properties["Protocol"]?.string,
            let devicePath = properties["Device"]?.objectPath, let entry = devices[devicePath],
            let member = entry.members.first(where: { $0.protocolType.identifier == protocolID && $0.device.id == deviceID })
        else { return nil }
        return ActiveRoute(session: MediaOutputSession(id: id, deviceID: deviceID), protocolType: member.protocolType, device: member.device)
    }

    private static func apply(_ properties: [String: DBusValue], to snapshot: inout PlaybackSnapshot) {
        if let state = properties["PlaybackState"]?.string.flatMap(PlaybackSnapshot.State.init(rawValue:)) { snapshot.state = state }
        if let position = properties["Position"]?.double { snapshot.position = position }
        if let rate = properties["Rate"]?.double { snapshot.playbackSpeed = rate }
        if let duration = properties["Duration"]?.double, duration > 0 { snapshot.timeRange = 0...duration }
    }

    private func added(_ path: DBusObjectPath, interfaces: [String: DBusValue], announce: Bool) async {
        if let properties = interfaces[DaemonNames.device]?.dictionary, let device = makeDevice(properties) {
            let isNew = devices[path] == nil
            devices[path] = device
            if announce || isNew { emit(isNew ? .deviceFound(device) : .deviceUpdated(device)) }
        } else if let properties = interfaces[DaemonNames.session]?.dictionary, let route = makeRoute(properties) {
            guard routes[route.session.id] == nil else { return }
            routes[route.session.id] = (route, path)
            emit(.routeActivated(route))
        }
    }

    private func handle(_ signal: DBusMessage) async {
        guard let path = signal.path else { return }
        switch (signal.interface, signal.member) {
        case ("org.freedesktop.DBus.ObjectManager", "InterfacesAdded"):
            guard signal.body.count == 2, let object = signal.body[0].objectPath else { return }
            await added(object, interfaces: signal.body[1].dictionary ?? [:], announce: true)
        case ("org.freedesktop.DBus.ObjectManager", "InterfacesRemoved"):
            guard let object = signal.body.first?.objectPath, let device = devices.removeValue(forKey: object) else { return }
            emit(.deviceLost(device))
        case ("org.freedesktop.DBus.Properties", "PropertiesChanged"):
            guard signal.body.count >= 2, let changed = signal.body[1].dictionary else { return }
            if path == DaemonNames.root, let failures = changed["DiscoveryFailures"] {
                applyDiscoveryFailures(failures)
            } else if let device = devices[path] {
                // A volume event carries only Volume and Muted; a full refresh is not a change of volume.
                if changed["Volume"] != nil, Set(changed.keys).isSubset(of: ["Volume", "Muted"]),
                    let route = routes.values.first(where: { entry in device.members.contains { $0.key == entry.route.key } })?.route
                {
                    emit(.volumeChanged(route, volume: Float(changed["Volume"]?.double ?? 0), muted: changed["Muted"]?.bool ?? false))
                }
                let properties = try? await call(path, "org.freedesktop.DBus.Properties", "GetAll", [.string(DaemonNames.device)])
                if let updated = properties?.first?.dictionary.flatMap(makeDevice), devices[path] != nil {
                    devices[path] = updated
                    emit(.deviceUpdated(updated))
                }
            } else if let (id, entry) = routes.first(where: { $0.value.path == path }) {
                if changed["Url"]?.string == "" {
                    controls.removeValue(forKey: id)?.finish()
                    emit(.sessionEnded(entry.route, reason: nil))
                } else if let control = controls[id] {
                    control.update { Self.apply(changed, to: &$0) }
                }
            }
        case (DaemonNames.session, "Received"):
            guard signal.body.count == 2, let channel = signal.body[0].string, let bytes = signal.body[1].bytes,
                let entry = routes.values.first(where: { $0.path == path })
            else { return }
            emit(channel == "route"
                ? .routeData(entry.route, application: "", data: Data(bytes))
                : .sessionData(entry.route, application: "", data: Data(bytes)))
        case (DaemonNames.session, "Ended"):
            guard let (id, entry) = routes.first(where: { $0.value.path == path }) else { return }
            routes[id] = nil
            let errorName = signal.body.first?.string ?? ""
            let reason: MediaDeviceError? = errorName.isEmpty
                ? nil : MediaDeviceError(dbusError: DBusError(name: errorName, message: signal.body.last?.string ?? ""))
            if let control = controls.removeValue(forKey: id) {
                control.finish()
                emit(.sessionEnded(entry.route, reason: reason))
            }
            emit(.routeDeactivated(entry.route, reason: reason))
        default:
            break
        }
    }

    /// Reports each protocol newly listed in `Manager1.DiscoveryFailures` as a discovery failure.
    private func applyDiscoveryFailures(_ value: DBusValue) {
        var failures: [String: String] = [:]
        for (key, reason) in value.unwrapped.dictionary ?? [:] { failures[key] = reason.string ?? "" }
        for (protocolID, reason) in failures.sorted(by: { $0.key < $1.key }) where discoveryFailures[protocolID] != reason {
            let name = devices.values.lazy.flatMap(\.members).first { $0.protocolType.identifier == protocolID }?.protocolType.displayName
            emit(.discoveryFailed(MediaSharingProtocol(protocolID, displayName: name ?? protocolID), MediaDeviceError(.discoveryFailed, reason)))
        }
        discoveryFailures = failures
    }

    private func daemonLeft() {
        guard !daemonGone else { return }
        daemonGone = true
        logger.warning("mediarouted left the bus")
        let reason = MediaDeviceError(.connectionFailed, "mediarouted left the bus")
        for (id, entry) in routes {
            if let control = controls.removeValue(forKey: id) {
                control.finish()
                emit(.sessionEnded(entry.route, reason: reason))
            }
            emit(.routeDeactivated(entry.route, reason: reason))
        }
        routes.removeAll()
        for device in devices.values { emit(.deviceLost(device)) }
        devices.removeAll()
    }

    /// Whether the daemon has left the bus.
    public var isDaemonGone: Bool { daemonGone }
}
