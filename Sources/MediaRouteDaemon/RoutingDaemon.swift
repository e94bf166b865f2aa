#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
public import BoxConfiguration
import BuildStamp
import HTTPServing
public import DBus
public import MediaRouteBusAPI
public import Logging
import MediaDevice
public import RouteSystem
public import SystemRouting
import RoutingModel

/// Publishes a routing system on D-Bus: device and session objects follow the
/// system's events; discovery and pairing agents are tracked per client, and a
/// client leaving the bus takes its discovery interest and agent with it.
public actor RoutingDaemon {
    public let system: RouteSystem
    let connection: DBusConnection
    let logger: Logger
    private var devices: [String: SystemDevice] = [:]
    private var routes: [UUID: ActiveRoute] = [:]
    /// `Activate` calls waiting for their route's `Session1` to be published by the event task.
    private var awaitingPublication: [UUID: [CheckedContinuation<Void, Never>]] = [:]
    private var urls: [UUID: String] = [:]
    /// The handed-over file each session plays (`Session1.StartFile`), by session.
    private var handedFiles: [UUID: String] = [:]
    /// Why activation tried each member last (`Session1.ProtocolReason` of its route).
    private var protocolReasons: [DeviceKey: String] = [:]
    private var discoveryClients: Set<String> = []
    private var agentOwner: String?
    #if PipeWire
    /// PipeWire sink nodes the daemon publishes for routes that take samples (a system-wide
    /// PipeWire, or `[audio] pipewire = yes`).
    private var pipeWireSinks: PipeWireSinkLauncher?
    /// Whether `mediarouted pipewire-session` in users' sessions publishes the nodes (`auto`
    /// without a system-wide PipeWire).
    private var sessionPipeWireSinks = false
    /// The node each route that takes samples gets (`Session1.SinkNode`).
    private var sinkNodes: [UUID: Session1.SinkNode] = [:]
    /// Whether routes that show real-time video get a video node too (`[video] pipewire`).
    private var pipeWireVideoNodes = true
    /// Who publishes the video node of each route that shows real-time video (`Session1.VideoSinkNode`).
    private var videoSinkNodes: [UUID: Session1.SinkNode.Publisher] = [:]

    func publishPipeWireVideoNodes(_ enabled: Bool) {
        pipeWireVideoNodes = enabled
    }

    /// Who publishes a route's video node, if it shows real-time video and someone publishes nodes.
    private func videoSinkNode(for route: ActiveRoute) -> Session1.SinkNode.Publisher? {
        guard pipeWireVideoNodes, pipeWireSinks != nil || sessionPipeWireSinks, route.device.capabilities.contains(.realtimeVideoStreaming) else { return nil }
        return pipeWireSinks != nil ? .daemon : .session
    }

    /// Publishes a PipeWire sink node for every route that takes real-time audio from now on.
    func publishPipeWireSinks(bus: String, runtimeDirectory: String?) {
        pipeWireSinks = PipeWireSinkLauncher(bus: bus, runtimeDirectory: runtimeDirectory, logger: logger)
    }

    /// Leaves the nodes to the session helpers: each route that takes samples says in
    /// `Session1.SinkNode` = `session` what node it wants.
    func leavePipeWireSinksToSessions() {
        sessionPipeWireSinks = true
    }

    /// The node a route gets, if it takes samples and someone publishes nodes.
    private func sinkNode(for route: ActiveRoute) async -> Session1.SinkNode? {
        guard pipeWireSinks != nil || sessionPipeWireSinks, route.device.capabilities.contains(.realtimeAudioStreaming),
            let support = await system.realtimeAudioSupport(on: route.session), let format = PipeWireSinkLauncher.format(for: support)
        else { return nil }
        let latency = await system.audioLatency(on: route.session, format: format) ?? support.latency
        let microseconds = max(0, (latency / .microseconds(1)).rounded())
        return Session1.SinkNode(
            publisher: pipeWireSinks != nil ? .daemon : .session, format: format,
            latencyMicroseconds: microseconds < 1e12 ? UInt64(microseconds) : 0)
    }
    #endif

    /// The bus client that acquired each route's real-time audio.
    private var audioOwners: [UUID: String] = [:]
    /// Who acquired each route's real-time video: its leaving the bus ends the video.
    private var videoOwners: [UUID: String] = [:]
    private var tasks: [Task<Void, Never>] = []
    private var playbackWatchers: [UUID: Task<Void, Never>] = [:]
    /// Group routes (`Manager1.CreateGroup`) by number.
    var groups: [Int: GroupRoute] = [:]
    var nextGroup = 0
    /// This box among the household's (`_mediaroute._udp`), when it has a household key.
    private(set) var presence: BoxPresence?
    /// Where local files named on the bus may come from (`[http] serve-from`): the daemon never
    /// hands a device a file outside them, whatever path a caller names.
    private(set) var servedDirectories = ServedDirectories(ServedDirectories.defaults)

    func setServedDirectories(_ directories: ServedDirectories) {
        servedDirectories = directories
    }

    /// Publishes this box and finds the others while discovery runs (`Manager1.Boxes`).
    func setPresence(_ presence: BoxPresence) async {
        self.presence = presence
        if await system.isDiscovering { await presence.setBrowsing(true) }
    }

    /// The boxes found changed: `Manager1.Boxes` is signalled.
    func boxesChanged() async {
        guard let presence else { return }
        connection.emitPropertiesChanged(
            path: DaemonNames.root, interface: Manager1.interface, changed: ["Boxes": Manager1.Properties.value(of: await Self.boxes(presence))])
    }

    private static func boxes(_ presence: BoxPresence) async -> [Manager1.Box] {
        await presence.boxes().map { entry in
            Manager1.Box(
                id: entry.box.id, name: entry.box.name, host: entry.box.address.host, port: entry.box.address.port,
                clockOffset: entry.offset, clockError: entry.error)
        }
    }
    /// What the protocols pinned, and the household's boxes that answered its key (`Manager1.ListTrust`).
    func pinnedIdentities() async -> [PinnedIdentity] {
        var entries = await system.pinnedIdentities()
        if let presence { entries += await presence.verifiedBoxes().sorted { $0.name < $1.name } }
        return entries
    }

    /// `Manager1.ForgetTrust`: the device's pins, or a household box's verification.
    func forgetIdentity(named name: String) async throws(DBusError) -> Int {
        let boxes = await presence?.forgetVerification(named: name) ?? 0
        do {
            return try await system.forgetIdentity(named: name) + boxes
        } catch let error as MediaDeviceError where error.code == .deviceNotFound && boxes > 0 {
            return boxes
        } catch {
            throw Self.busError(error)
        }
    }

    /// `Manager1.AcceptTrust`: pins the identity a device offered in place of its pinned one.
    /// A household box has nothing to accept: its key is its identity.
    func acceptIdentity(named name: String) async throws(DBusError) -> Int {
        do {
            return try await system.acceptIdentity(named: name)
        } catch let error as MediaDeviceError where error.code == .deviceNotFound {
            if let presence, await presence.verifiedBoxes().contains(where: { $0.isNamed(name) }) {
                throw MediaDeviceError(.invalidArgument, "\(name) is a household box: the household key is its identity, there is nothing to accept").dbusError
            }
            throw error.dbusError
        } catch {
            throw Self.busError(error)
        }
    }

    private static func busError(_ error: any Error) -> DBusError {
        (error as? MediaDeviceError)?.dbusError ?? DBusError(name: DBusError.failedName, message: "\(error)")
    }

    /// The adapters the inventory reports (Manager1.Adapters).
    private(set) var adapters: [AdapterSettings] = []

    /// What the box learned of the routes people pick (`Manager1.Suggest`, `RecordRouteChoice`).
    let suggestions: RouteSuggestionStore
    /// The local hour, injected in tests.
    let hourOfDay: @Sendable () -> Int
    /// Who may play into a route (``PrivateReaders/mayPlayAudio(_:)``).
    private let readers: PrivateReaders

    public init(
        system: RouteSystem, connection: DBusConnection, suggestions: RouteSuggestionStore = RouteSuggestionStore(path: nil),
        hourOfDay: @escaping @Sendable () -> Int = currentLocalHour, logger: Logger
    ) {
        self.system = system
        self.connection = connection
        self.readers = PrivateReaders(connection: connection)
        self.suggestions = suggestions
        self.hourOfDay = hourOfDay
        self.logger = logger
    }

    /// The route suggested for `content` from `application`, among the devices present that can play it.
    func suggest(application: String, content: PlaybackContent) async -> RouteSuggestion {
        let available = await system.devicesList.filter(\.isAvailable)
        return await suggestions.suggestion(for: content, application: application, hour: hourOfDay(), available: available)
    }

    /// Remembers the person's pick (nil device: played locally).
    func recordRouteChoice(application: String, content: PlaybackContent, deviceID: String?) async throws {
        var name: String?
        if let deviceID {
            guard let device = await system.device(named: deviceID) else {
                throw MediaDeviceError(.deviceNotFound, "no device \(deviceID)").dbusError
            }
            name = device.displayName
        }
        await suggestions.record(.init(
            application: application, content: content, hour: hourOfDay(), deviceID: deviceID, displayName: name))
    }

    /// Exports the objects, follows the system and the bus, then takes the bus name.
    /// - Throws: ``DBusError`` when the name is taken.
    public func start(busName: String = DaemonNames.busName) async throws {
        await connection.export(ManagerObject(daemon: self).object, at: DaemonNames.root)
        let events = await system.events()
        tasks.append(Task { [weak self] in
            for await event in events { await self?.handle(event) }
        })
        let owners = try await connection.signals(matching: DBusMatchRule(
            sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged"))
        tasks.append(Task { [weak self] in
            for await signal in owners {
                guard signal.body.count == 3, let name = signal.body[0].string, signal.body[2].string == "" else { continue }
                await self?.clientLeft(name)
            }
        })
        for device in await system.devicesList { await publish(device) }
        guard try await connection.requestName(busName) else {
            throw DBusError(name: "org.freedesktop.DBus.Error.AddressInUse", message: "\(busName) is already owned")
        }
        logger.info("acquired bus name", metadata: ["name": "\(busName)"])
    }

    /// Deactivates every route, stops following, and gives the name up.
    public func stop(busName: String = DaemonNames.busName) async {
        // Deactivate first, and let the event task publish the routes' ends
        // (its stream finishes with the system), so clients see a clean `Ended`.
        #if PipeWire
        await pipeWireSinks?.stopAll()
        #endif
        await system.shutdown()
        if let events = tasks.first { await events.value }
        for task in tasks { task.cancel() }
        tasks.removeAll()
        for watcher in playbackWatchers.values { watcher.cancel() }
        // The event task is gone: nobody will publish for calls still waiting.
        for waiting in awaitingPublication.values.joined() { waiting.resume() }
        awaitingPublication.removeAll()
        try? await connection.releaseName(busName)
    }

    // MARK: Adapters

    /// Publishes the adapter list (name, subsystem, transport, role, enabled, Wi-Fi scan mode).
    public func setAdapters(_ adapters: [AdapterSettings]) {
        guard adapters != self.adapters else { return }
        self.adapters = adapters
        connection.emitPropertiesChanged(
            path: DaemonNames.root, interface: Manager1.interface,
            changed: ["Adapters": Manager1.Properties.value(of: adapters.map(Manager1.Adapter.init))])
    }

    /// `Manager1`'s properties now.
    func managerProperties() async -> Manager1.Properties {
        var properties = Manager1.Properties()
        properties.discovering = await system.isDiscovering
        properties.protocols = await system.loadedProtocols.map(\.identifier)
        properties.adapters = adapters.map(Manager1.Adapter.init)
        properties.discoveryFailures = discoveryFailures
        properties.commit = MediaRouteBuild.commit
        if let presence { properties.boxes = await Self.boxes(presence) }
        return properties
    }

    // MARK: Clients

    func startDiscovery(for client: String) async {
        discoveryClients.insert(client)
        await system.beginDiscovery(client: client)
        await presence?.setBrowsing(true)
        connection.emitPropertiesChanged(path: DaemonNames.root, interface: Manager1.interface, changed: ["Discovering": .bool(true)])
    }

    func stopDiscovery(for client: String) async {
        await system.endDiscovery(client: client)
        if !(await system.isDiscovering) {
            await presence?.setBrowsing(false)
            connection.emitPropertiesChanged(path: DaemonNames.root, interface: Manager1.interface, changed: ["Discovering": .bool(false)])
        }
    }

    func registerAgent(owner: String, path: DBusObjectPath) async {
        agentOwner = owner
        let timeout = system.configuration.pairingTimeout
        await system.setPairingAgent(RemotePairingAgent(connection: connection, owner: owner, path: path, timeout: timeout) {
            [weak self] key in await self?.devicePath(containing: key)
        })
    }

    func unregisterAgent(owner: String) async {
        guard agentOwner == owner else { return }
        agentOwner = nil
        await system.setPairingAgent(nil)
    }

    private func clientLeft(_ name: String) async {
        if discoveryClients.remove(name) != nil {
            logger.info("client left; dropping its discovery", metadata: ["client": "\(name)"])
            await system.endAllDiscovery(client: name)
            if !(await system.isDiscovering) {
                await presence?.setBrowsing(false)
                connection.emitPropertiesChanged(path: DaemonNames.root, interface: Manager1.interface, changed: ["Discovering": .bool(false)])
            }
        }
        if agentOwner == name { await unregisterAgent(owner: name) }
        for (number, group) in groups where group.owner == name {
            logger.info("client left; ending its group", metadata: ["client": "\(name)", "group": "\(number)"])
            await endGroup(number)
        }
        for (id, owner) in audioOwners where owner == name {
            audioOwners[id] = nil
            guard let route = routes[id] else { continue }
            logger.info("client left; ending its real-time audio", metadata: ["client": "\(name)", "device": "\(route.device.displayName)"])
            await system.stopRealtimeSampleDelivery(on: route.session)
        }
        for (id, owner) in videoOwners where owner == name {
            videoOwners[id] = nil
            guard let route = routes[id] else { continue }
            logger.info("client left; ending its real-time video", metadata: ["client": "\(name)", "device": "\(route.device.displayName)"])
            await system.releaseVideo(on: route.session)
        }
    }

    // MARK: Real-time audio

    /// `Session1.AcquireAudio`: paced delivery for `sender`, which owns it until it closes the
    /// descriptor, calls `ReleaseAudio` or leaves the bus.
    func acquireAudio(_ session: MediaOutputSession, format: SampleBuffer.Format, sender: String) async throws -> [DBusValue] {
        // The bus policy lets every local user call this one method (a session's PipeWire node
        // acquires the route's audio as its user): only the seat's active user gets past here.
        guard await readers.mayPlayAudio(sender) else {
            throw DBusError(
                name: DBusError.accessDeniedName,
                message: "only root, the mediaroute group and the user of an active seat session may play into a route")
        }
        let acquisition = try await mapErrors { try await system.acquireAudio(on: session, format: format) }
        audioOwners[session.id] = sender
        // The reply's descriptor is duplicated into the message; ours closes when the value goes.
        return Session1.AudioReply.values(
            descriptor: DBusFileDescriptor(owning: acquisition.descriptor), format: acquisition.format, latency: acquisition.latency)
    }

    /// `Manager1.AcquireGroupAudio`: one delivery for the routes of `paths`, owned by `sender`
    /// as ``acquireAudio(_:format:sender:)``'s is.
    func acquireGroupAudio(_ paths: [DBusObjectPath], format: SampleBuffer.Format, sender: String) async throws -> [DBusValue] {
        let sessions = try paths.map(activeSession(at:))
        let (acquisition, leads) = try await mapErrors { try await system.acquireGroupAudio(on: sessions, format: format) }
        for session in sessions { audioOwners[session.id] = sender }
        return Manager1.groupAudioReply(
            descriptor: DBusFileDescriptor(owning: acquisition.descriptor), format: acquisition.format, latency: acquisition.latency, leads: leads)
    }

    /// `Manager1.JoinGroupAudio`: the route's audio is the group's, owned by the group's owner
    /// (the group's writer leaving the bus ends it on the route too).
    func joinGroupAudio(_ path: DBusObjectPath, joining memberPath: DBusObjectPath) async throws -> [DBusValue] {
        let (joining, member) = (try activeSession(at: path), try activeSession(at: memberPath))
        let lead = try await mapErrors { try await system.joinGroupAudio(on: joining, joining: member) }
        audioOwners[joining.id] = audioOwners[member.id]
        return [.uint64(Session1.AudioReply.microseconds(lead))]
    }

    /// The active route whose `Session1` is at `path`.
    /// - Throws: `org.mediaroute.Error.DeviceNotActive` when there is none.
    func activeSession(at path: DBusObjectPath) throws -> MediaOutputSession {
        guard let route = routes.values.first(where: { DaemonNames.sessionPath($0.session) == path }) else {
            throw MediaDeviceError(.deviceNotActive, "\(path) is not an active route").dbusError
        }
        return route.session
    }

    /// The URL a route plays, when a session was started on it.
    func playingURL(_ session: MediaOutputSession) -> String? { urls[session.id] }

    /// `Session1.ReleaseAudio`: ends delivery now.
    func releaseAudio(_ session: MediaOutputSession) async {
        audioOwners[session.id] = nil
        await system.stopRealtimeSampleDelivery(on: session)
    }

    // MARK: Real-time video

    /// `Session1.AcquireVideo`: pictures for `sender`, who owns the video until it closes the
    /// descriptor, calls `ReleaseVideo` or leaves the bus. Who may call it is the bus policy's
    /// (root and the mediaroute group), as for every method but `AcquireAudio`.
    func acquireVideo(_ session: MediaOutputSession, format: VideoFrameFormat, sender: String) async throws -> [DBusValue] {
        // As for audio: the bus lets every local user call it (a session's PipeWire video node),
        // only root, the group and the seat's active user get past here.
        guard await readers.mayPlayAudio(sender) else {
            throw DBusError(
                name: DBusError.accessDeniedName,
                message: "only root, the mediaroute group and the user of an active seat session may show video on a route")
        }
        let acquisition = try await mapErrors { try await system.acquireVideo(on: session, format: format) }
        videoOwners[session.id] = sender
        return Session1.VideoReply.values(descriptor: DBusFileDescriptor(owning: acquisition.descriptor), latency: acquisition.latency)
    }

    /// `Session1.ReleaseVideo`: ends the video now.
    func releaseVideo(_ session: MediaOutputSession) async {
        videoOwners[session.id] = nil
        await system.releaseVideo(on: session)
    }

    // MARK: Discovery failures

    /// Why each protocol's discovery failed (protocol id → reason) since discovery last
    /// started: `Manager1.DiscoveryFailures`, changed with PropertiesChanged.
    private(set) var discoveryFailures: [String: String] = [:]

    private func setDiscoveryFailures(_ failures: [String: String]) {
        guard failures != discoveryFailures else { return }
        discoveryFailures = failures
        connection.emitPropertiesChanged(
            path: DaemonNames.root, interface: Manager1.interface, changed: ["DiscoveryFailures": Manager1.Properties.value(of: failures)])
    }

    // MARK: Devices and sessions

    /// `Device1`'s properties of device `id` now, one snapshot for `GetAll` and `PropertiesChanged`.
    func deviceProperties(_ id: String) async -> Device1.Properties? {
        guard let device = devices[id] else { return nil }
        var volume: (Float, Bool)?
        if let route = routes.values.first(where: { route in device.members.contains { $0.key == route.key } }) {
            volume = try? await system.volume(on: route.session)
        }
        return Device1.Properties(
            device: device, volume: volume, preferredProtocol: await system.preferredProtocol(forDevice: id),
            preferredCodecs: await system.preferredCodecs(forDevice: id))
    }

    /// `Device1.PreferredCodecs` set: codec names as `[bluetooth] codecs` takes them, each once.
    func setPreferredCodecs(_ codecs: [String], for id: String) async throws {
        let names = codecs.map { $0.lowercased() }
        if let unknown = names.first(where: { !DaemonConfiguration.bluetoothCodecNames.contains($0) }) {
            throw DBusError.invalidArgs("unknown codec \"\(unknown)\" (known: \(DaemonConfiguration.bluetoothCodecNames.joined(separator: ", ")))")
        }
        guard Set(names).count == names.count else { throw DBusError.invalidArgs("a codec is named twice") }
        try await mapErrors { try await system.setPreferredCodecs(names, forDevice: id) }
        connection.emitPropertiesChanged(
            path: DaemonNames.devicePath(id), interface: Device1.interface, changed: ["PreferredCodecs": .strings(names)])
    }

    /// The `Device1` object of the device `key` belongs to.
    func devicePath(containing key: DeviceKey) -> DBusObjectPath? {
        devices.values.first { $0.members.contains { $0.key == key } }.map { DaemonNames.devicePath($0.id) }
    }

    func setPreferredProtocol(_ protocolID: String?, for id: String) async throws {
        try await mapErrors { try await system.setPreferredProtocol(protocolID, forDevice: id) }
        if let properties = await deviceProperties(id), let value = properties.values["PreferredProtocol"] {
            connection.emitPropertiesChanged(path: DaemonNames.devicePath(id), interface: Device1.interface, changed: ["PreferredProtocol": value])
        }
    }

    /// `Session1`'s properties of `session` now.
    func sessionProperties(_ session: MediaOutputSession) async -> Session1.Properties? {
        guard let route = routes[session.id] else { return nil }
        var properties = Session1.Properties(
            id: session.id, deviceID: route.device.id, device: devicePath(containing: route.key) ?? DaemonNames.root,
            protocolID: route.protocolType.identifier)
        let control = await system.playbackControl(for: session)
        if let snapshot = control?.snapshot {
            properties.playbackState = snapshot.state
            properties.rate = snapshot.playbackSpeed
            properties.duration = snapshot.timeRange?.upperBound ?? 0
            properties.title = snapshot.metadata.title
        }
        properties.position = control?.currentPlaybackPosition ?? 0
        properties.url = urls[session.id]
        properties.application = await system.sessionApplication(on: session)
        let status = await system.routeStatus(on: session)
        properties.protocolReason = status?.protocolReason ?? protocolReasons[route.key]
        properties.details = status?.details ?? RouteStatus.Details()
        properties.audio = status?.audio
        properties.video = status?.video
        #if PipeWire
        properties.sinkNode = sinkNodes[session.id]
        properties.videoSinkNode = videoSinkNodes[session.id]
        #endif
        return properties
    }

    func activate(_ id: String, protocolID: String?) async throws -> DBusObjectPath {
        let route = try await mapErrors {
            guard let key = await system.device(withID: id)?.key else { throw MediaDeviceError(.deviceNotFound, "no device \(id)") }
            return try await system.activate(key, protocolID: protocolID)
        }
        // The route is published once, by the event task (`routeActivated`), whoever
        // activated it; the reply waits for that, so that a client sees the session's
        // `InterfacesAdded` before the reply that names it.
        if routes[route.session.id] == nil {
            await withCheckedContinuation { awaitingPublication[route.session.id, default: []].append($0) }
        }
        return DaemonNames.sessionPath(route.session)
    }

    func deactivate(_ id: String) async throws {
        try await withRoute(of: id) { system, session in await system.deactivate(session) }
    }

    func withRoute(of id: String, _ body: @Sendable (RouteSystem, MediaOutputSession) async throws -> Void) async throws {
        guard let device = devices[id] else { throw MediaDeviceError(.deviceNotFound, "no device \(id)").dbusError }
        guard let route = routes.values.first(where: { route in device.members.contains { $0.key == route.key } }) else {
            throw MediaDeviceError(.deviceNotActive, "\(device.displayName) is not active").dbusError
        }
        try await mapErrors { try await body(system, route.session) }
    }

    func startSession(
        _ session: MediaOutputSession, url: URL, application: String?, metadata: PlaybackMetadata = PlaybackMetadata()
    ) async throws {
        var url = url
        if url.isFileURL {
            do {
                url = URL(fileURLWithPath: try servedDirectories.admit(url.path))
            } catch {
                throw MediaDeviceError(.invalidArgument, error.description).dbusError
            }
        }
        try await begin(session, url: url, application: application, metadata: metadata)
        releaseHandedFile(of: session)
    }

    /// `Session1.StartFile`: plays a file the caller opened and handed over. The daemon reads
    /// the descriptor and never opens the caller's path (a home directory the daemon's user
    /// cannot, and should not, open); the file is let go when the session ends.
    func startSession(
        _ session: MediaOutputSession, handing descriptor: DBusFileDescriptor, name: String, application: String?, metadata: PlaybackMetadata
    ) async throws {
        let path: String
        do {
            path = try HandedFiles.shared.hand(owning: descriptor.duplicate(), name: name)
        } catch {
            throw MediaDeviceError(.invalidArgument, error.description).dbusError
        }
        do {
            try await begin(session, url: URL(fileURLWithPath: path), application: application, metadata: metadata)
        } catch {
            HandedFiles.shared.release(path)
            throw error
        }
        releaseHandedFile(of: session)
        handedFiles[session.id] = path
    }

    /// Lets go of the file the session's last `StartFile` handed over.
    private func releaseHandedFile(of session: MediaOutputSession) {
        if let path = handedFiles.removeValue(forKey: session.id) { HandedFiles.shared.release(path) }
    }

    private func begin(_ session: MediaOutputSession, url: URL, application: String?, metadata: PlaybackMetadata) async throws {
        let control = try await mapErrors {
            try await system.startSession(on: session, identifier: application, url: url, metadata: metadata)
        }
        urls[session.id] = url.absoluteString
        let path = DaemonNames.sessionPath(session)
        playbackWatchers[session.id]?.cancel()
        playbackWatchers[session.id] = Task { [connection] in
            var last: PlaybackSnapshot?
            for await snapshot in control.changes() {
                guard snapshot != last else { continue }
                last = snapshot
                connection.emitPropertiesChanged(path: path, interface: Session1.interface, changed: Session1.Properties.playbackValues(of: snapshot))
            }
        }
    }

    private func publish(_ device: SystemDevice) async {
        let isNew = devices[device.id] == nil
        devices[device.id] = device
        let path = DaemonNames.devicePath(device.id)
        if isNew {
            await connection.export(DeviceObject(daemon: self, id: device.id).object, at: path)
        } else if let properties = await deviceProperties(device.id) {
            connection.emitPropertiesChanged(path: path, interface: Device1.interface, changed: properties.values)
        }
    }

    private func publish(_ route: ActiveRoute) async {
        routes[route.session.id] = route
        await connection.export(SessionObject(daemon: self, route: route).object, at: DaemonNames.sessionPath(route.session))
        for waiting in awaitingPublication.removeValue(forKey: route.session.id) ?? [] { waiting.resume() }
    }

    private func handle(_ event: RouteSystemEvent) async {
        switch event {
        case .deviceFound(let device), .deviceUpdated(let device):
            await publish(device)
        case .deviceLost(let device):
            devices[device.id] = nil
            connection.unexport(DaemonNames.devicePath(device.id))
        case .routeActivated(let route):
            logger.info("route activated", metadata: ["device": "\(route.device.displayName)", "protocol": "\(route.key.protocolID)"])
            #if PipeWire
            // Known before the session is exported: a session helper reads it from InterfacesAdded.
            sinkNodes[route.session.id] = await sinkNode(for: route)
            videoSinkNodes[route.session.id] = videoSinkNode(for: route)
            #endif
            await publish(route)
            #if PipeWire
            if let pipeWireSinks, let node = sinkNodes[route.session.id], node.publisher == .daemon {
                await pipeWireSinks.start(
                    session: DaemonNames.sessionPath(route.session).rawValue, id: route.session.id.uuidString,
                    deviceName: route.device.displayName, format: node.format, latency: .microseconds(Int64(node.latencyMicroseconds)))
            }
            if let pipeWireSinks, videoSinkNodes[route.session.id] == .daemon {
                await pipeWireSinks.startVideo(
                    session: DaemonNames.sessionPath(route.session).rawValue, id: route.session.id.uuidString, deviceName: route.device.displayName)
            }
            #endif
        case .routeDeactivated(let route, let reason):
            logger.info("route ended", metadata: ["device": "\(route.device.displayName)", "reason": "\(reason.map { "\($0)" } ?? "deactivated")"])
            #if PipeWire
            await pipeWireSinks?.stop(id: route.session.id.uuidString)
            sinkNodes[route.session.id] = nil
            videoSinkNodes[route.session.id] = nil
            #endif
            let path = DaemonNames.sessionPath(route.session)
            emit(.ended(reason), at: path)
            routes[route.session.id] = nil
            urls[route.session.id] = nil
            releaseHandedFile(of: route.session)
            playbackWatchers.removeValue(forKey: route.session.id)?.cancel()
            connection.unexport(path)
            await memberEnded(path)
        case .sessionEnded(let route, let reason):
            logger.info("session ended", metadata: ["device": "\(route.device.displayName)", "reason": "\(reason.map { "\($0)" } ?? "stopped")"])
            playbackWatchers.removeValue(forKey: route.session.id)?.cancel()
            urls[route.session.id] = nil
            releaseHandedFile(of: route.session)
            connection.emitPropertiesChanged(
                path: DaemonNames.sessionPath(route.session), interface: Session1.interface, changed: Session1.Properties.endedValues)
        case .volumeChanged(let route, let volume, let muted):
            logger.info("volume changed", metadata: ["device": "\(route.device.displayName)", "level": "\(volume)", "muted": "\(muted)"])
            if let device = await system.device(containing: route.key) {
                connection.emitPropertiesChanged(
                    path: DaemonNames.devicePath(device.id), interface: Device1.interface,
                    changed: Device1.Properties.volumeValues(level: volume, muted: muted))
            }
        case .routeChanged(let route, let reason):
            logger.info("route changed", metadata: ["device": "\(route.device.displayName)", "reason": "\(reason)"])
            if let values = await sessionProperties(route.session)?.values {
                let details = values.filter { ["ProtocolVersion", "Timing", "Codec", "Bitrate", "LatencyDeclared"].contains($0.key) }
                connection.emitPropertiesChanged(path: DaemonNames.sessionPath(route.session), interface: Session1.interface, changed: details)
            }
        case .audioEnded(let route, let statistics):
            connection.emitPropertiesChanged(
                path: DaemonNames.sessionPath(route.session), interface: Session1.interface,
                changed: Session1.Properties.audioValues(of: statistics))
        case .routeData(let route, _, let data):
            emit(.received(.route, data: Array(data)), at: DaemonNames.sessionPath(route.session))
        case .sessionData(let route, _, let data):
            emit(.received(.session, data: Array(data)), at: DaemonNames.sessionPath(route.session))
        case .activationStateChanged(let key, _, _):
            if let device = await system.device(containing: key) { await publish(device) }
        case .discoveryFailed(let protocolType, let error):
            var failures = discoveryFailures
            failures[protocolType.identifier] = error.message
            setDiscoveryFailures(failures)
        case .discoveryStarted:
            setDiscoveryFailures([:])
        case .protocolChosen(let key, let reason):
            protocolReasons[key] = reason
        default:
            break
        }
    }

    private func emit(_ signal: Session1.Signal, at path: DBusObjectPath) {
        connection.emitSignal(path: path, interface: Session1.interface, member: signal.member, signal.arguments)
    }
}
