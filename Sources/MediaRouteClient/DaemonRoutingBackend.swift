#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
public import DBus
public import Logging
public import MediaClock
public import MediaRouteBusAPI
public import RoutingModel
import SessionPlayback
import SystemRouting
import EventBroadcast

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
    /// The daemon's devices as its `Device1` properties say, and the device they make.
    private var devices: [DBusObjectPath: (properties: Device1.Properties, device: SystemDevice)] = [:]
    /// One route the daemon runs: its `Session1` object and properties.
    private struct RouteEntry {
        var route: ActiveRoute
        var path: DBusObjectPath
        var properties: Session1.Properties
    }

    private var routes: [UUID: RouteEntry] = [:]
    /// `activate` calls waiting for the `InterfacesAdded` of the session their reply named.
    private var awaitingSessions: [DBusObjectPath: [Int: CheckedContinuation<ActiveRoute?, Never>]] = [:]
    private var nextWaiter = 0
    private var controls: [UUID: PlaybackControl] = [:]
    private let observers = EventBroadcaster<RouteSystemEvent>()
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
            (lhs.value.dictionary?[Device1.interface] != nil ? 0 : 1, lhs.key) < (rhs.value.dictionary?[Device1.interface] != nil ? 0 : 1, rhs.key)
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
        observers.finish()
    }

    // MARK: Events

    public func events() -> AsyncStream<RouteSystemEvent> {
        observers.subscribe()
    }

    private func emit(_ event: RouteSystemEvent) {
        observers.yield(event)
    }

    public var activeRoutes: [ActiveRoute] { routes.values.map(\.route) }

    public var devicesList: [SystemDevice] {
        devices.values.map(\.device).sorted { $0.displayName < $1.displayName }
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

    private func call(_ path: DBusObjectPath, _ call: Device1.Call, timeout: Duration = .seconds(25)) async throws -> [DBusValue] {
        try await self.call(path, Device1.interface, call.member, call.arguments, timeout: timeout)
    }

    private func call(_ path: DBusObjectPath, _ call: Session1.Call, timeout: Duration = .seconds(25)) async throws -> [DBusValue] {
        try await self.call(path, Session1.interface, call.member, call.arguments, timeout: timeout)
    }

    private func call(_ call: Manager1.Call) async throws -> [DBusValue] {
        try await self.call(DaemonNames.root, Manager1.interface, call.member, call.arguments)
    }

    private func getAll(_ path: DBusObjectPath, _ interface: String) async throws -> [String: DBusValue] {
        try await call(path, "org.freedesktop.DBus.Properties", "GetAll", [.string(interface)]).first?.dictionary ?? [:]
    }

    public func setPairingAgent(_ agent: (any PairingAgent)?) async {
        self.agent = agent
        if agent != nil {
            await connection.export(pairingAgentObject(), at: Self.agentPath)
            _ = try? await call(.registerPairingAgent(Self.agentPath))
        } else {
            _ = try? await call(.unregisterPairingAgent(Self.agentPath))
            connection.unexport(Self.agentPath)
        }
    }

    private func pairingAgentObject() -> DBusObject {
        let method = PairingAgent1.method
        return DBusObject(interfaces: [DBusInterface(PairingAgent1.interface, methods: [
            DBusMethod(method.member, inputs: method.inputs, outputs: method.outputs) { [weak self] call in
                let request = try PairingAgent1.Request(arguments: call.arguments)
                guard let self, let code = await self.answerPairing(request) else { throw PairingAgent1.canceledError }
                return [.string(code)]
            },
        ])])
    }

    private func answerPairing(_ question: PairingAgent1.Request) async -> String? {
        guard let agent, let member = devices[question.device]?.device.members.first,
            let device = OutputDeviceDescription(id: member.device.id, displayName: question.name, capabilities: member.device.capabilities,
                                           deviceType: member.device.deviceType)
        else { return nil }
        let request = PairingRequest(
            device: device, protocolType: member.protocolType, session: MediaOutputSession(deviceID: device.id),
            reason: question.reason, authorizationMethod: question.method)
        return await agent.pairingCode(for: request)
    }

    public func activate(_ key: DeviceKey, protocolID: String?, features: OutputDeviceDescription.Capabilities) async throws -> ActiveRoute {
        guard let path = devices.first(where: { $0.value.device.members.contains { $0.key == key } })?.key else {
            throw MediaDeviceError(.deviceNotFound, "no device \(key)")
        }
        let reply = try await call(path, .activate(protocolID: protocolID), timeout: .seconds(300))
        guard let sessionPath = reply.first?.objectPath else { throw MediaDeviceError(.connectionFailed, "no session path") }
        // The route comes one way only: the session's `InterfacesAdded`, which the daemon
        // sends before this reply. Its handling may still be queued behind us.
        guard let route = await announcedRoute(at: sessionPath, within: .seconds(5)) else {
            throw MediaDeviceError(.connectionFailed, "the daemon did not announce the session \(sessionPath)")
        }
        return route
    }

    /// The route of a session once its `InterfacesAdded` has been handled; nil when it
    /// does not come within `timeout` or the daemon leaves.
    private func announcedRoute(at path: DBusObjectPath, within timeout: Duration) async -> ActiveRoute? {
        if let known = routes.values.first(where: { $0.path == path }) { return known.route }
        guard !daemonGone else { return nil }
        nextWaiter += 1
        let token = nextWaiter
        let deadline = clock.now() + timeout
        let timer = Task { [clock] in
            guard (try? await clock.sleep(until: deadline)) != nil else { return }
            self.stopAwaiting(path, token: token)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { awaitingSessions[path, default: [:]][token] = $0 }
    }

    private func stopAwaiting(_ path: DBusObjectPath, token: Int) {
        awaitingSessions[path]?.removeValue(forKey: token)?.resume(returning: nil)
        if awaitingSessions[path]?.isEmpty == true { awaitingSessions[path] = nil }
    }

    public func deactivate(_ session: MediaOutputSession) async {
        guard let route = routes[session.id], let device = devicePath(for: route.route) else { return }
        _ = try? await call(device, .deactivate)
    }

    public func beginDiscovery(client: String) async {
        discoveryCount += 1
        if discoveryCount == 1 { _ = try? await call(.startDiscovery) }
    }

    public func endDiscovery(client: String) async {
        guard discoveryCount > 0 else { return }
        discoveryCount -= 1
        if discoveryCount == 0 { _ = try? await call(.stopDiscovery) }
    }

    private func devicePath(for route: ActiveRoute) -> DBusObjectPath? {
        devices.first { $0.value.device.members.contains { $0.key == route.key } }?.key
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
        _ = try await call(try routeDevice(session), .setVolume(level))
    }

    public func changeVolume(by increments: Int, on session: MediaOutputSession) async throws {
        _ = try await call(try routeDevice(session), .changeVolume(steps: Int32(clamping: increments)))
    }

    public func setMuted(_ muted: Bool, on session: MediaOutputSession) async throws {
        _ = try await call(try routeDevice(session), .mute(muted))
    }

    public func volume(on session: MediaOutputSession) async throws -> (volume: Float, muted: Bool) {
        // Kept current by the daemon's PropertiesChanged, so no call is needed.
        guard let properties = devices[try routeDevice(session)]?.properties else {
            throw MediaDeviceError(.deviceNotActive, "\(session) is not active")
        }
        return (properties.volume, properties.muted)
    }

    public func startSession(
        on session: MediaOutputSession, identifier: String?, url: URL, metadata: PlaybackMetadata
    ) async throws -> any InterfaceControllable {
        let path = try sessionPath(session)
        let mode: Session1.Mode = identifier == nil ? .player : .application
        if url.isFileURL {
            // The caller's own file goes over as a descriptor it opened: the daemon never opens
            // the caller's paths (and its user need not be able to).
            let descriptor = open(url.path, O_RDONLY | O_CLOEXEC | O_NOCTTY)
            guard descriptor >= 0 else {
                throw MediaDeviceError(.invalidArgument, "cannot open \(url.path): \(String(cString: strerror(errno)))")
            }
            let handed = DBusFileDescriptor(owning: descriptor)
            _ = try await call(path, .startFile(descriptor: handed, name: url.lastPathComponent, mode: mode, metadata: metadata), timeout: .seconds(60))
        } else {
            _ = try await call(path, .start(url: url, mode: mode, metadata: metadata), timeout: .seconds(60))
        }
        guard var properties = routes[session.id]?.properties else { throw MediaDeviceError(.deviceNotActive, "\(session) is not active") }
        properties.apply(try await getAll(path, Session1.interface))
        routes[session.id]?.properties = properties
        let control = PlaybackControl(clock: clock)
        control.update { [properties] snapshot in
            properties.apply(to: &snapshot)
            snapshot.metadata = PlaybackMetadata(
                title: properties.title ?? metadata.title, artist: metadata.artist, album: metadata.album,
                artworkURL: metadata.artworkURL, duration: properties.duration > 0 ? properties.duration : metadata.duration,
                isLive: metadata.isLive, contentURL: url)
        }
        controls[session.id] = control
        let connection = self.connection
        let daemon = self.daemon
        let devicePath = routes[session.id].flatMap { entry in self.devicePath(for: entry.route) }
        tasks.append(Task {
            // The app's commands, carried to the daemon in order: every one the in-process system takes.
            for await command in control.commands {
                let request: (path: DBusObjectPath?, interface: String, member: String, args: [DBusValue])
                if let call = Session1.Call(command) {
                    request = (path, Session1.interface, call.member, call.arguments)
                } else if let call = Device1.Call(command) {
                    request = (devicePath, Device1.interface, call.member, call.arguments)
                } else {
                    continue
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
        case .play, .pause, .seek, .stop:
            guard let call = Session1.Call(command) else { fallthrough }
            _ = try await self.call(path, call)
        default: throw MediaDeviceError(.unsupported, "\(command) is not sent through mediarouted")
        }
    }

    /// `Manager1.Suggest`: the route the daemon suggests for `content` from `application`.
    public func suggest(application: String, content: PlaybackContent) async throws -> RouteSuggestion {
        Manager1.suggestion(fromReply: try await call(.suggest(application: application, content: content)))
    }

    /// `Manager1.RecordRouteChoice`: remembers the person's pick (nil device: played locally).
    public func recordRouteChoice(application: String, content: PlaybackContent, deviceID: String?) async throws {
        _ = try await call(.recordRouteChoice(application: application, content: content, deviceID: deviceID))
    }

    public func sessionApplication(on session: MediaOutputSession) async -> String? {
        routes[session.id]?.properties.application
    }

    public func stopSession(on session: MediaOutputSession) async {
        guard let path = try? sessionPath(session) else { return }
        _ = try? await call(path, Session1.Call.stop)
    }

    public func sendRouteData(_ data: Data, fromApplication application: String, on session: MediaOutputSession) async throws {
        _ = try await call(try sessionPath(session), .sendToExtension(Array(data)))
    }

    public func sendSessionData(_ data: Data, on session: MediaOutputSession) async throws {
        _ = try await call(try sessionPath(session), .send(Array(data)))
    }

    /// Checks the route takes real-time samples (the sink then acquires `Session1.AcquireAudio`'s descriptor).
    public func beginRealtimeSampleDelivery(on session: MediaOutputSession) async throws {
        guard let route = routes[session.id]?.route else { throw MediaDeviceError(.deviceNotActive, "\(session) is not active") }
        guard route.device.capabilities.contains(.realtimeAudioStreaming) else {
            throw MediaDeviceError(.unsupported, "\(route.device.displayName) does not take real-time samples")
        }
    }

    /// `Session1.ReleaseAudio`.
    public func stopRealtimeSampleDelivery(on session: MediaOutputSession) async {
        guard let path = try? sessionPath(session) else { return }
        _ = try? await call(path, Session1.Call.releaseAudio)
    }

    /// `Session1.AcquireAudio`: the descriptor comes in the reply; the caller owns it.
    public func acquireAudio(on session: MediaOutputSession, format: SampleBuffer.Format) async throws -> AudioAcquisition {
        let reply = try await call(try sessionPath(session), .acquireAudio(format))
        do {
            return try Session1.AudioReply.acquisition(from: reply)
        } catch {
            throw MediaDeviceError(.sessionFailed, "mediarouted's AcquireAudio reply: \(error)")
        }
    }

    /// `Session1.AcquireVideo`: the descriptor comes in the reply; the caller owns it.
    public func acquireVideo(on session: MediaOutputSession, format: VideoFrameFormat) async throws -> VideoAcquisition {
        let reply = try await call(try sessionPath(session), .acquireVideo(format))
        do {
            return try Session1.VideoReply.acquisition(from: reply, format: format)
        } catch {
            throw MediaDeviceError(.sessionFailed, "mediarouted's AcquireVideo reply: \(error)")
        }
    }

    /// `Session1.ReleaseVideo`.
    public func releaseVideo(on session: MediaOutputSession) async {
        guard let path = try? sessionPath(session) else { return }
        _ = try? await call(path, Session1.Call.releaseVideo)
    }

    /// `Manager1.AcquireGroupAudio`: the descriptor comes in the reply; the caller owns it.
    public func acquireGroupAudio(
        on sessions: [MediaOutputSession], format: SampleBuffer.Format
    ) async throws -> (acquisition: AudioAcquisition, leads: [Duration]) {
        let reply = try await call(.acquireGroupAudio(sessions: sessions.map(DaemonNames.sessionPath), format: format))
        do {
            return try Manager1.groupAudio(from: reply)
        } catch {
            throw MediaDeviceError(.sessionFailed, "mediarouted's AcquireGroupAudio reply: \(error)")
        }
    }

    /// `Manager1.CreateGroup`: the routes of `sessions`, each playing the same URL, become one
    /// group route the daemon keeps on one timeline (paused until ``DaemonGroupRoute/play()``).
    public func createGroup(_ sessions: [MediaOutputSession]) async throws -> DaemonGroupRoute {
        let reply = try await call(.createGroup(sessions: sessions.map(DaemonNames.sessionPath)))
        guard reply.count == 1, case .objectPath(let path) = reply[0].unwrapped else {
            throw MediaDeviceError(.sessionFailed, "mediarouted's CreateGroup reply is not (o)")
        }
        return DaemonGroupRoute(path: path, backend: self)
    }

    /// A `Group1` call on the group at `path`.
    func groupCall(_ path: DBusObjectPath, _ call: Group1.Call) async throws {
        _ = try await self.call(path, Group1.interface, call.member, call.arguments)
    }

    /// The `Group1` properties of the group at `path`, read now.
    func groupProperties(_ path: DBusObjectPath) async throws -> Group1.Properties {
        Group1.Properties(values: try await getAll(path, Group1.interface))
    }

    /// `Manager1.Boxes`: the household's other boxes the daemon found, read now.
    public func boxes() async throws -> [Manager1.Box] {
        Manager1.Properties(values: try await getAll(DaemonNames.root, Manager1.interface)).boxes
    }

    /// `Manager1.ListTrust`: what the daemon's protocols pinned, and the household boxes that answered its key.
    public func pinnedIdentities() async throws -> [PinnedIdentity] {
        try Manager1.pinnedIdentities(fromReply: try await call(.listTrust))
    }

    /// `Manager1.ForgetTrust`: how many entries were forgotten.
    public func forgetIdentity(named name: String) async throws -> Int {
        Int(try await call(.forgetTrust(name: name)).first?.integer ?? 0)
    }

    /// `Manager1.AcceptTrust`: how many offered identities were pinned.
    public func acceptIdentity(named name: String) async throws -> Int {
        Int(try await call(.acceptTrust(name: name)).first?.integer ?? 0)
    }

    /// `Manager1.JoinGroupAudio`.
    public func joinGroupAudio(on session: MediaOutputSession, joining member: MediaOutputSession) async throws -> Duration {
        let reply = try await call(.joinGroupAudio(session: DaemonNames.sessionPath(session), member: DaemonNames.sessionPath(member)))
        guard reply.count == 1, case .uint64(let lead) = reply[0].unwrapped else {
            throw MediaDeviceError(.sessionFailed, "mediarouted's JoinGroupAudio reply is not (t)")
        }
        return .microseconds(Int64(clamping: lead))
    }

    /// `Session1.SetNowPlaying`.
    public func setRealtimeNowPlaying(_ nowPlaying: RealtimeNowPlaying, on session: MediaOutputSession) async throws {
        _ = try await call(try sessionPath(session), .setNowPlaying(nowPlaying))
    }

    /// `Session1`'s properties read now.
    public func routeStatus(on session: MediaOutputSession) async -> RouteStatus? {
        guard let path = try? sessionPath(session), let values = try? await getAll(path, Session1.interface),
            let entry = routes[session.id]
        else { return nil }
        var properties = entry.properties
        properties.apply(values)
        return properties.routeStatus(device: entry.route.device.displayName, protocolName: entry.route.protocolType.displayName)
    }

    public func audioStatistics(on session: MediaOutputSession) async -> RealtimeAudioStatistics? {
        guard let path = try? sessionPath(session), let values = try? await getAll(path, Session1.interface) else { return nil }
        var properties = routes[session.id]?.properties
        properties?.apply(values)
        return properties?.audio
    }

    // MARK: Mirroring the daemon

    private func makeRoute(_ values: [String: DBusValue], path: DBusObjectPath) -> RouteEntry? {
        guard let properties = Session1.Properties(values: values), let entry = devices[properties.device]?.device,
            let member = entry.members.first(where: { $0.protocolType.identifier == properties.protocolID && $0.device.id == properties.deviceID })
        else { return nil }
        let route = ActiveRoute(
            session: MediaOutputSession(id: properties.id, deviceID: properties.deviceID), protocolType: member.protocolType, device: member.device)
        return RouteEntry(route: route, path: path, properties: properties)
    }

    private func added(_ path: DBusObjectPath, interfaces: [String: DBusValue], announce: Bool) async {
        if let values = interfaces[Device1.interface]?.dictionary, let properties = Device1.Properties(values: values),
            let device = properties.systemDevice
        {
            let isNew = devices[path] == nil
            devices[path] = (properties, device)
            if announce || isNew { emit(isNew ? .deviceFound(device) : .deviceUpdated(device)) }
        } else if let values = interfaces[Session1.interface]?.dictionary, let entry = makeRoute(values, path: path) {
            guard routes[entry.route.session.id] == nil else { return }
            routes[entry.route.session.id] = entry
            emit(.routeActivated(entry.route))
            for waiting in (awaitingSessions.removeValue(forKey: path) ?? [:]).values { waiting.resume(returning: entry.route) }
        }
    }

    private func handle(_ signal: DBusMessage) async {
        guard let path = signal.path else { return }
        switch (signal.interface, signal.member) {
        case ("org.freedesktop.DBus.ObjectManager", "InterfacesAdded"):
            guard signal.body.count == 2, let object = signal.body[0].objectPath else { return }
            await added(object, interfaces: signal.body[1].dictionary ?? [:], announce: true)
        case ("org.freedesktop.DBus.ObjectManager", "InterfacesRemoved"):
            guard let object = signal.body.first?.objectPath, let entry = devices.removeValue(forKey: object) else { return }
            emit(.deviceLost(entry.device))
        case ("org.freedesktop.DBus.Properties", "PropertiesChanged"):
            guard signal.body.count >= 2, let changed = signal.body[1].dictionary else { return }
            if path == DaemonNames.root, let failures = changed["DiscoveryFailures"] {
                applyDiscoveryFailures(failures)
            } else if var entry = devices[path] {
                // The payload says what changed: applied here, nothing is read back.
                entry.properties.apply(changed)
                guard let updated = entry.properties.systemDevice else { return }
                let deviceChanged = updated != entry.device
                devices[path] = (entry.properties, updated)
                // A volume event carries only Volume and Muted; a full refresh is not a change of volume.
                if changed["Volume"] != nil, Set(changed.keys).isSubset(of: ["Volume", "Muted"]),
                    let route = routes.values.first(where: { route in updated.members.contains { $0.key == route.route.key } })?.route
                {
                    emit(.volumeChanged(route, volume: entry.properties.volume, muted: entry.properties.muted))
                }
                if deviceChanged || changed["PreferredProtocol"] != nil { emit(.deviceUpdated(updated)) }
            } else if let (id, entry) = routes.first(where: { $0.value.path == path }) {
                routes[id]?.properties.apply(changed)
                // The session ended: its Url went empty. Url is private (docs/operations.md), so the
                // broadcast names it as invalidated beside the idle state instead of carrying "".
                let invalidated = signal.body.count >= 3 ? (signal.body[2].array ?? []).compactMap(\.string) : []
                let ended = changed["Url"]?.string == ""
                    || (invalidated.contains("Url") && changed["PlaybackState"]?.string == PlaybackSnapshot.State.idle.rawValue)
                if changed["AudioActive"]?.bool == false, let statistics = routes[id]?.properties.audio {
                    emit(.audioEnded(entry.route, statistics: statistics))
                }
                if ended {
                    controls.removeValue(forKey: id)?.finish()
                    emit(.sessionEnded(entry.route, reason: nil))
                } else if let control = controls[id], let properties = routes[id]?.properties {
                    control.update { properties.apply(to: &$0) }
                }
            }
        case (Session1.interface, let member?):
            guard let event = Session1.Signal(member: member, body: signal.body),
                let (id, entry) = routes.first(where: { $0.value.path == path })
            else { return }
            switch event {
            case .received(let channel, let bytes):
                emit(channel == .route
                    ? .routeData(entry.route, application: "", data: Data(bytes))
                    : .sessionData(entry.route, application: "", data: Data(bytes)))
            case .ended(let reason):
                routes[id] = nil
                if let control = controls.removeValue(forKey: id) {
                    control.finish()
                    emit(.sessionEnded(entry.route, reason: reason))
                }
                emit(.routeDeactivated(entry.route, reason: reason))
            }
        default:
            break
        }
    }

    /// Reports each protocol newly listed in `Manager1.DiscoveryFailures` as a discovery failure.
    private func applyDiscoveryFailures(_ value: DBusValue) {
        var failures: [String: String] = [:]
        for (key, reason) in value.unwrapped.dictionary ?? [:] { failures[key] = reason.string ?? "" }
        for (protocolID, reason) in failures.sorted(by: { $0.key < $1.key }) where discoveryFailures[protocolID] != reason {
            let name = devices.values.lazy.flatMap(\.device.members).first { $0.protocolType.identifier == protocolID }?.protocolType.displayName
            emit(.discoveryFailed(MediaSharingProtocol(protocolID, displayName: name ?? protocolID), MediaDeviceError(.discoveryFailed, reason)))
        }
        discoveryFailures = failures
    }

    private func daemonLeft() {
        guard !daemonGone else { return }
        daemonGone = true
        logger.warning("mediarouted left the bus")
        for waiting in awaitingSessions.values.flatMap(\.values) { waiting.resume(returning: nil) }
        awaitingSessions.removeAll()
        let reason = MediaDeviceError(.connectionFailed, "mediarouted left the bus")
        for (id, entry) in routes {
            if let control = controls.removeValue(forKey: id) {
                control.finish()
                emit(.sessionEnded(entry.route, reason: reason))
            }
            emit(.routeDeactivated(entry.route, reason: reason))
        }
        routes.removeAll()
        for entry in devices.values { emit(.deviceLost(entry.device)) }
        devices.removeAll()
    }

    /// Whether the daemon has left the bus.
    public var isDaemonGone: Bool { daemonGone }
}
