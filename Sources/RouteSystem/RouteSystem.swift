#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import Logging
public import MediaClock
public import MediaDevice
import EventBroadcast
public import RoutingModel

/// Hosts media device extensions and owns all routing state: which devices are
/// known, which are being activated or are active, which sessions run.
///
/// Extensions report through their routing manager; those reports are
/// handled here one at a time, in the order each extension made them.
/// Apps (through `SystemRouting`) and the daemon call the async methods below.
public actor RouteSystem {
    /// Timeouts and policies.
    public struct Configuration: Sendable {
        /// How long an extension may take to answer an activation or a pairing code.
        public var activationTimeout: Duration = .seconds(30)
        /// How long the person may take to enter a pairing code.
        public var pairingTimeout: Duration = .seconds(120)
        /// How long an extension may take to start a URL session.
        public var sessionStartTimeout: Duration = .seconds(30)
        /// One volume step as a fraction of full volume, used when a relative
        /// change is asked of a device with absolute volume.
        public var absoluteVolumeStep: Float = 1.0 / 16
        /// Protocols to try first when a device is reached by several, most preferred first:
        /// ids (`org.mediaroute.upnp`) or their last part (`upnp`). `[routing] preferred-protocols`.
        public var preferredProtocols: [String] = []
        /// How much later a device plays in a group of real-time audio than its own latency
        /// says, by its display name (negative: earlier): a link slower one way than the other
        /// puts a receiver off by half the difference, which no two-way clock exchange can see.
        /// `[audio] group-offsets`.
        public var groupOffsets: [String: Duration] = [:]

        public init() {}
    }

    struct LoadedExtension {
        let instance: any MediaDeviceExtension
        let protocolType: MediaSharingProtocol
        let supportsSimultaneousSessions: Bool
        let order: Int
        /// Every call into the extension, in the order the system makes them.
        let calls = ExtensionCallQueue()

        /// Calls the extension after every call asked for before, without waiting.
        func send(_ call: @escaping @Sendable (any MediaDeviceExtension) async -> Void) {
            let instance = instance
            calls.enqueue { await call(instance) }
        }

        /// Calls the extension after every call asked for before, and returns its answer.
        func call<Value: Sendable>(_ body: @escaping @Sendable (any MediaDeviceExtension) async -> Value) async -> Value {
            let instance = instance
            return await calls.perform { await body(instance) }
        }
    }

    private struct RouteRecord {
        let route: ActiveRoute
        /// The device as its extension reported it when the route came up: what calls into
        /// the extension pass (apps see ``route``'s description of it).
        let device: MediaOutputDevice
        var playback: PlaybackControl?
        var application: String?
        var pendingStart: CheckedContinuation<PlaybackControl, any Error>?
        var startTimeout: Task<Void, Never>?
        var realtime = false
        /// What the app said the session plays.
        var metadata: PlaybackMetadata?
        /// Why activation chose this protocol.
        var protocolReason: String?
    }

    typealias Slot = Int

    private let clock: any HostClock
    let logger: Logger
    public nonisolated let configuration: Configuration

    private let reports: AsyncStream<(Slot, MediaDeviceRoutingEvent)>
    private let reportContinuation: AsyncStream<(Slot, MediaDeviceRoutingEvent)>.Continuation
    private var consumer: Task<Void, Never>?

    private(set) var extensions: [Slot: LoadedExtension] = [:]
    private var nextSlot: Slot = 0
    private var directory = DeviceDirectory()
    private var devices: [DeviceKey: MediaOutputDevice] { directory.devices }
    /// Per merged device (by its id): the protocol the person prefers for it.
    private var preferredProtocolByDevice: [String: String] = [:]
    private var preferredCodecsByDevice: [String: [String]] = [:]
    /// Why activation chose the member being activated, until its route is up.
    private var chosenReasons: [DeviceKey: String] = [:]
    private var activations = ActivationTable()
    private var routes: [UUID: RouteRecord] = [:]
    private var discoveryClients = DiscoveryClients()
    private let observers = EventBroadcaster<RouteSystemEvent>()
    private var pairingAgent: (any PairingAgent)?
    /// Paced real-time deliveries, by route session (kept after the writer ended, for statistics).
    var audioDeliveries: [UUID: AudioDeliveryRecord] = [:]
    /// What each route's real-time audio is, as its app last said (``setRealtimeNowPlaying(_:on:)``).
    var realtimeNowPlaying: [UUID: RealtimeNowPlaying] = [:]
    var nextAudioDelivery: UInt64 = 0
    /// Real-time video deliveries, by route session (kept after the writer ended, for statistics).
    var videoDeliveries: [UUID: VideoDeliveryRecord] = [:]
    var nextVideoDelivery: UInt64 = 0

    public init(
        configuration: Configuration = Configuration(),
        clock: any HostClock = SystemHostClock(),
        logger: Logger = Logger(label: "mediaroute.system")
    ) {
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        (reports, reportContinuation) = AsyncStream.makeStream(of: (Slot, MediaDeviceRoutingEvent).self)
    }

    /// Stops discovery, deactivates every route and stops handling reports.
    public func shutdown() async {
        for record in Array(routes.values) {
            await deactivate(record.route.session)
        }
        if discoveryClients.removeAll() { await setDiscovery(running: false) }
        for loaded in extensions.values { await loaded.calls.finish() }
        reportContinuation.finish()
        consumer?.cancel()
        consumer = nil
        observers.finish()
    }

    // MARK: Extensions

    /// Loads an extension built by `make`, which receives the extension's routing manager.
    /// - Returns: the extension's protocol.
    /// - Throws: ``MediaDeviceError/Code/invalidProtocolType`` when the protocol id is
    ///   malformed or already loaded; the extension is then discarded.
    @discardableResult
    public func load<Extension: MediaDeviceExtension>(
        _ make: (MediaDeviceRoutingManager) -> Extension
    ) throws -> MediaSharingProtocol {
        startConsumingReports()
        let slot = nextSlot
        nextSlot += 1
        let continuation = reportContinuation
        let manager = MediaDeviceRoutingManager { event in continuation.yield((slot, event)) }
        let instance = make(manager)
        let protocolType = instance.protocolType
        try protocolType.validate()
        if extensions.values.contains(where: { $0.protocolType.identifier == protocolType.identifier }) {
            throw MediaDeviceError(.invalidProtocolType, "protocol id \(protocolType.identifier) is already loaded")
        }
        let loaded = LoadedExtension(
            instance: instance, protocolType: protocolType,
            supportsSimultaneousSessions: instance.supportsSimultaneousSessions, order: slot)
        extensions[slot] = loaded
        logger.info("loaded extension", metadata: ["protocol": "\(protocolType.identifier)"])
        if !discoveryClients.isEmpty {
            loaded.send { await $0.startDeviceDiscovery() }
        }
        return protocolType
    }

    /// The loaded protocols, in load order.
    public var loadedProtocols: [MediaSharingProtocol] {
        extensions.values.sorted { $0.order < $1.order }.map(\.protocolType)
    }

    /// Sets who answers pairing prompts (nil: prompts are cancelled at once).
    public func setPairingAgent(_ agent: (any PairingAgent)?) {
        pairingAgent = agent
    }

    // MARK: Observation

    /// Every event from now on, in order. Iterate from one task; stop iterating to unsubscribe.
    public func events() -> AsyncStream<RouteSystemEvent> {
        observers.subscribe()
    }

    func emit(_ event: RouteSystemEvent) {
        observers.yield(event)
    }

    // MARK: Discovery

    /// Registers a client's interest in discovery; discovery runs while at least one client wants it.
    public func beginDiscovery(client: String) async {
        if discoveryClients.begin(client) { await setDiscovery(running: true) }
    }

    /// Withdraws one interest of a client; discovery stops when no client wants it.
    public func endDiscovery(client: String) async {
        if discoveryClients.end(client) { await setDiscovery(running: false) }
    }

    /// Withdraws every interest of a client (it went away).
    public func endAllDiscovery(client: String) async {
        if discoveryClients.endAll(client) { await setDiscovery(running: false) }
    }

    /// Whether discovery is running.
    public var isDiscovering: Bool { !discoveryClients.isEmpty }

    private func setDiscovery(running: Bool) async {
        emit(running ? .discoveryStarted : .discoveryStopped)
        for loaded in extensions.values.sorted(by: { $0.order < $1.order }) {
            if running {
                await loaded.call { await $0.startDeviceDiscovery() }
            } else {
                await loaded.call { await $0.stopDeviceDiscovery() }
            }
        }
    }

    /// A device as its extension reports it now, endpoints included: for the daemon and tests
    /// that look beneath the app's view (``SystemDevice`` members carry only its description).
    public func reportedDevice(for key: DeviceKey) -> MediaOutputDevice? {
        devices[key]
    }

    /// The known devices, merged across protocols, in the order they were first found.
    /// Entries that share a display name but not an identity get a distinguishing suffix.
    public var devicesList: [SystemDevice] { presentation.list }

    /// The directory as the picker shows it (``DevicePresentation``).
    private var presentation: DevicePresentation {
        var states: [DeviceKey: ActivationState] = [:]
        for record in routes.values { states[record.route.key] = .active }
        for (key, state) in activations.states { states[key] = state }
        return DevicePresentation(
            directory: directory,
            protocols: Dictionary(
                extensions.values.map { ($0.protocolType.identifier, DevicePresentation.LoadedProtocol(protocolType: $0.protocolType, order: $0.order)) },
                uniquingKeysWith: { first, _ in first }),
            states: states)
    }

    private func presented(_ entry: DeviceDirectory.Entry) -> SystemDevice? {
        presentation.presented(entry)
    }

    /// The merged device that contains `key`.
    public func device(containing key: DeviceKey) -> SystemDevice? {
        directory.entry(containing: key).flatMap(presented)
    }

    /// The merged device with exactly this id.
    public func device(withID id: String) -> SystemDevice? {
        directory.entry(withID: id).flatMap(presented)
    }

    /// The merged device with this id, or whose display name matches (case-insensitively;
    /// a name shared by two devices matches only with its distinguishing suffix).
    public func device(named nameOrID: String) -> SystemDevice? {
        devicesList.named(nameOrID)
    }

    /// The activation state of one device through one protocol.
    public func state(of key: DeviceKey) -> ActivationState {
        if let state = activations.state(of: key) { return state }
        return routes.values.contains { $0.route.key == key } ? .active : .idle
    }

    /// Sets the protocol the person prefers for one device (nil: the configured order).
    /// - Throws: deviceNotFound, or invalidArgument when no member speaks `protocolID`.
    public func setPreferredProtocol(_ protocolID: String?, forDevice deviceID: String) throws {
        guard let device = device(named: deviceID) else { throw MediaDeviceError(.deviceNotFound, "no device \(deviceID)") }
        if let protocolID, !device.members.contains(where: { $0.protocolType.identifier == protocolID }) {
            throw MediaDeviceError(.invalidArgument, "\(device.displayName) is not reached through \(protocolID)")
        }
        preferredProtocolByDevice[device.id] = protocolID
    }

    /// The protocol preferred for a device, if the person chose one.
    public func preferredProtocol(forDevice deviceID: String) -> String? {
        device(named: deviceID).flatMap { preferredProtocolByDevice[$0.id] }
    }

    /// Sets the codecs preferred for a device, most preferred first (empty: the configured
    /// order), and tells the extension of each of its members: an active route moves to the
    /// first its device takes where the protocol can. At most 16 names of at most 32 characters.
    public func setPreferredCodecs(_ codecs: [String], forDevice deviceID: String) async throws {
        guard let device = device(named: deviceID) else { throw MediaDeviceError(.deviceNotFound, "no device \(deviceID)") }
        guard codecs.count <= 16, codecs.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 32 }) else {
            throw MediaDeviceError(.invalidArgument, "at most 16 codec names of 1–32 characters")
        }
        preferredCodecsByDevice[device.id] = codecs.isEmpty ? nil : codecs
        for member in device.members {
            guard let loaded = loadedExtension(for: member.protocolType.identifier), let reported = devices[member.key] else { continue }
            await loaded.call { await $0.setPreferredCodecs(codecs, for: reported) }
        }
    }

    /// The codecs preferred for a device (empty: the configured order).
    public func preferredCodecs(forDevice deviceID: String) -> [String] {
        device(named: deviceID).flatMap { preferredCodecsByDevice[$0.id] } ?? []
    }

    /// How activation chooses among `device`'s members (``ProtocolChoice``).
    private func protocolChoice(for device: SystemDevice) -> ProtocolChoice {
        ProtocolChoice(
            personsChoice: preferredProtocolByDevice[device.id], configured: configuration.preferredProtocols,
            loadOrder: Dictionary(extensions.values.map { ($0.protocolType.identifier, $0.order) }, uniquingKeysWith: min))
    }

    func loadedExtension(for protocolID: String) -> LoadedExtension? {
        extensions.values.first { $0.protocolType.identifier == protocolID }
    }

    // MARK: Activation

    /// Activates a device named by a person or an app: its id or display name,
    /// resolved once here (``device(named:)``), then activated by key.
    public func activate(
        deviceID: String, protocolID: String? = nil, features: MediaOutputDevice.Capabilities = []
    ) async throws -> ActiveRoute {
        guard let key = device(named: deviceID)?.key else {
            throw MediaDeviceError(.deviceNotFound, "no device \(deviceID)")
        }
        return try await activate(key, protocolID: protocolID, features: features)
    }

    /// Activates a device: connects, pairs when the device asks for a code (through the
    /// pairing agent), and returns the active route.
    /// - Parameters:
    ///   - device: the key of any member of the merged device.
    ///   - protocolID: which protocol to use when several reach the device (default: the
    ///     first, in load order, that has `features`).
    ///   - features: the capabilities the app needs.
    /// - Throws: ``MediaDeviceError`` — deviceNotFound, activationInProgress,
    ///   deviceAlreadyActive, simultaneousSessionsUnsupported, authorizationFailed,
    ///   connectionFailed, timedOut, deviceLost.
    public func activate(
        _ device: DeviceKey, protocolID: String? = nil, features: MediaOutputDevice.Capabilities = []
    ) async throws -> ActiveRoute {
        guard let entry = self.device(containing: device) else {
            throw MediaDeviceError(.deviceNotFound, "no device \(device)")
        }
        let choice = protocolChoice(for: entry)
        let candidates = try choice.candidates(of: entry, protocolID: protocolID, features: features)
        var failures: [String] = []
        for (index, member) in candidates.enumerated() {
            let why = choice.reason(for: member, after: failures)
            chosenReasons[member.key] = why
            emit(.protocolChosen(member.key, reason: why))
            logger.info("activating", metadata: ["device": "\(member.key)", "why": "\(why)"])
            do {
                return try await activateMember(member.key, features: features)
            } catch let error as MediaDeviceError {
                // The person's own answers end it; a protocol that cannot connect hands over to the next.
                guard !ProtocolChoice.endsActivation(error), index + 1 < candidates.count else { throw error }
                failures.append("\(member.protocolType.displayName) failed (\(error.message))")
            }
        }
        throw MediaDeviceError(.connectionFailed, "\(entry.displayName): \(failures.joined(separator: "; "))")
    }

    private func activateMember(_ key: DeviceKey, features: MediaOutputDevice.Capabilities) async throws -> ActiveRoute {
        guard let device = devices[key], let loaded = loadedExtension(for: key.protocolID) else {
            throw MediaDeviceError(.deviceNotFound, "no device \(key)")
        }
        if activations.contains(key) {
            throw MediaDeviceError(.activationInProgress, "\(device.displayName) is already being activated")
        }
        if routes.values.contains(where: { $0.route.key == key }) {
            throw MediaDeviceError(.deviceAlreadyActive, "\(device.displayName) is already active")
        }
        if !loaded.supportsSimultaneousSessions {
            let busy = routes.values.contains { $0.route.protocolType.identifier == key.protocolID }
                || activations.isActivating(protocolID: key.protocolID)
            if busy {
                throw MediaDeviceError(
                    .simultaneousSessionsUnsupported,
                    "\(loaded.protocolType.displayName) handles one session at a time and one is active")
            }
        }
        let session = MediaOutputSession(deviceID: device.id)
        return try await withCheckedThrowingContinuation { continuation in
            // Checked above, on this actor, with no suspension since: `begin` cannot refuse.
            try? activations.begin(key, session: session, continuation: continuation, name: device.displayName)
            emit(.activationStateChanged(key, session: session, state: .activating))
            armActivationTimeout(key, session: session)
            loaded.send { await $0.activateDevice(device, session: session, for: features) }
        }
    }

    /// Ends an active route: stops its session and real-time delivery, and deactivates the device.
    public func deactivate(_ session: MediaOutputSession) async {
        await endRoute(session.id, reason: nil)
    }

    private func armActivationTimeout(_ key: DeviceKey, session: MediaOutputSession) {
        let deadline = clock.now() + configuration.activationTimeout
        activations.setTimeout(key, Task { [clock] in
            guard (try? await clock.sleep(until: deadline)) != nil else { return }
            await self.activationTimedOut(key, session: session, what: "the device did not answer")
        })
    }

    private func activationTimedOut(_ key: DeviceKey, session: MediaOutputSession, what: String) async {
        guard activations.isUnderWay(key, for: session) else { return }
        finishActivation(key, .failure(MediaDeviceError(.timedOut, "activation of \(key.deviceID): \(what)")))
        if let device = devices[key], let loaded = loadedExtension(for: key.protocolID) {
            await loaded.call { await $0.deactivateDevice(device, session: session) }
        }
    }

    /// Ends an activation: the state leaves activating/awaiting, the caller gets the result.
    private func finishActivation(_ key: DeviceKey, _ result: Result<(ActiveRoute, MediaOutputDevice), MediaDeviceError>) {
        guard let activation = activations.finish(key) else { return }
        defer { chosenReasons[key] = nil }
        switch result {
        case .success(let (route, device)):
            routes[route.session.id] = RouteRecord(route: route, device: device, playback: nil)
            routes[route.session.id]?.protocolReason = chosenReasons.removeValue(forKey: key)
            emit(.activationStateChanged(key, session: activation.session, state: .active))
            emit(.routeActivated(route))
            activation.continuation?.resume(returning: route)
        case .failure(let error):
            logger.info("activation failed", metadata: ["device": "\(key)", "error": "\(error)"])
            emit(.activationStateChanged(key, session: activation.session, state: .idle))
            emit(.activationFailed(key, session: activation.session, error: error))
            activation.continuation?.resume(throwing: error)
        }
        if let entry = device(containing: key) { emit(.deviceUpdated(entry)) }
    }

    private func pairingRequested(
        _ key: DeviceKey, device: MediaOutputDevice, session: MediaOutputSession, reason: String,
        method: MediaOutputDevice.AuthorizationMethod
    ) async {
        guard activations.isUnderWay(key, for: session), activations.state(of: key) == .activating,
            let loaded = loadedExtension(for: key.protocolID)
        else {
            logger.warning("pairing request for no activation", metadata: ["device": "\(key)"])
            return
        }
        let request = PairingRequest(
            device: OutputDeviceDescription(device), protocolType: loaded.protocolType, session: session, reason: reason,
            authorizationMethod: method)
        let deadline = clock.now() + configuration.pairingTimeout
        let agent = pairingAgent
        let timeout = Task { [clock] in
            guard (try? await clock.sleep(until: deadline)) != nil else { return }
            await self.activationTimedOut(key, session: session, what: "no pairing code was entered in time")
        }
        let prompt = Task {
            let code = await agent?.pairingCode(for: request)
            await self.pairingAnswered(key, session: session, code: code)
        }
        guard activations.awaitPairing(key, session: session, timeout: timeout, prompt: prompt) else { return }
        emit(.activationStateChanged(key, session: session, state: .awaitingPairingCode))
        emit(.pairingRequested(request))
    }

    private func pairingAnswered(_ key: DeviceKey, session: MediaOutputSession, code: String?) async {
        guard let device = devices[key], let loaded = loadedExtension(for: key.protocolID),
            activations.pairingAnswered(key, session: session)
        else { return }
        emit(.activationStateChanged(key, session: session, state: .activating))
        armActivationTimeout(key, session: session)
        await loaded.call { await $0.connectUsingPairingCode(code, to: device, session: session) }
    }

    // MARK: Sessions

    /// Starts playback of `url` on an active route.
    /// - Throws: deviceNotActive, unsupported (no URL playback), sessionFailed (one is
    ///   already playing, or the device failed), timedOut.
    public func startSession(
        on session: MediaOutputSession, identifier: String?, url: URL
    ) async throws -> any InterfaceControllable {
        try await startSession(on: session, identifier: identifier, url: url, metadata: PlaybackMetadata(contentURL: url))
    }

    /// Starts playback of `url` on an active route, described by `metadata` (title, artist,
    /// album, artwork, duration, live): it reaches the device where its protocol carries it,
    /// and the session's playback state (so Now Playing and MPRIS) in every case.
    public func startSession(
        on session: MediaOutputSession, identifier: String?, url: URL, metadata: PlaybackMetadata
    ) async throws -> any InterfaceControllable {
        var metadata = metadata
        if metadata.contentURL == nil { metadata.contentURL = url }
        guard let record = routes[session.id], let loaded = loadedExtension(for: record.route.key.protocolID) else {
            throw MediaDeviceError(.deviceNotActive, "\(session) is not active")
        }
        try SessionRules.checkStart(of: url, on: record.route, busy: record.playback != nil || record.pendingStart != nil)
        let deadline = clock.now() + configuration.sessionStartTimeout
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<PlaybackControl, any Error>) in
            routes[session.id]?.pendingStart = continuation
            routes[session.id]?.startTimeout = Task { [clock] in
                guard (try? await clock.sleep(until: deadline)) != nil else { return }
                self.finishStart(session.id, .failure(MediaDeviceError(.timedOut, "the device did not start playback")))
            }
            routes[session.id]?.metadata = metadata
            let described = metadata
            loaded.send { await $0.startSession(session, identifier: identifier, url: url, metadata: described) }
        }
    }

    private func finishStart(_ id: UUID, _ result: Result<(PlaybackControl, String?), MediaDeviceError>) {
        guard var record = routes[id], let continuation = record.pendingStart else { return }
        record.pendingStart = nil
        record.startTimeout?.cancel()
        record.startTimeout = nil
        switch result {
        case .success(let (control, application)):
            record.playback = control
            record.application = application
            routes[id] = record
            // What the app says it plays beats a device's guess from the file name; a duration
            // the device measured beats the app's.
            if let described = record.metadata {
                control.update { $0.metadata = SessionRules.merged(reported: $0.metadata, described: described) }
            }
            // `stop()` on the control ends the session, as `Session1.Stop` does through the daemon.
            let routeSession = record.route.session
            control.setStopHandler { [weak self] in
                Task { await self?.stopSession(on: routeSession) }
            }
            emit(.sessionStarted(record.route, application: application))
            continuation.resume(returning: control)
        case .failure(let error):
            routes[id] = record
            continuation.resume(throwing: error)
        }
    }

    /// Stops the URL session of a route (the route stays active).
    public func stopSession(on session: MediaOutputSession) async {
        guard var record = routes[session.id], let loaded = loadedExtension(for: record.route.key.protocolID) else {
            return
        }
        let control = record.playback
        record.playback = nil
        record.application = nil
        routes[session.id] = record
        finishStart(session.id, .failure(MediaDeviceError(.cancelled, "the session was stopped")))
        await loaded.call { await $0.stopSession(session) }
        if let control {
            control.finish()
            emit(.sessionEnded(record.route, reason: nil))
        }
    }

    /// The application the device runs for the route's session (nil: the device's own player,
    /// so there is no session data channel).
    public func sessionApplication(on session: MediaOutputSession) -> String? {
        routes[session.id]?.application
    }

    /// How a route plays: its protocol, what its extension says of it, and its real-time delivery.
    public func routeStatus(on session: MediaOutputSession) async -> RouteStatus? {
        guard let record = routes[session.id], let loaded = loadedExtension(for: record.route.key.protocolID) else { return nil }
        var details = await loaded.call { await $0.routeDetails(session: session) }
        if details.declaredLatencyMicroseconds == nil, record.route.device.capabilities.contains(.realtimeAudioStreaming),
            let handler = loaded.instance as? any RealtimeSampleHandling
        {
            let latency = await ordered(handler) { await $0.realtimeAudioSupport(session: session) }.latency
            details.declaredLatencyMicroseconds = UInt64(max(0, latency / .microseconds(1)))
        }
        return RouteStatus(
            device: record.route.device.displayName, protocolID: loaded.protocolType.identifier,
            protocolName: loaded.protocolType.displayName, protocolReason: routes[session.id]?.protocolReason ?? record.protocolReason,
            details: details, audio: audioStatistics(on: session), video: videoStatistics(on: session))
    }

    /// The playback of a route's URL session, if one runs.
    public func playbackControl(for session: MediaOutputSession) -> (any InterfaceControllable)? {
        routes[session.id]?.playback
    }

    /// The active routes.
    public var activeRoutes: [ActiveRoute] {
        routes.values.map(\.route).sorted { $0.device.displayName < $1.device.displayName }
    }

    // MARK: Real-time samples

    /// Tells a route whose device and extension take real-time samples that they are coming.
    public func beginRealtimeSampleDelivery(on session: MediaOutputSession) async throws {
        _ = try await startRealtimeHandler(on: session)
    }

    /// The route's extension as a sample handler, told samples start if it was not yet.
    func startRealtimeHandler(on session: MediaOutputSession) async throws -> (any RealtimeSampleHandling, ActiveRoute) {
        guard let record = routes[session.id], let loaded = loadedExtension(for: record.route.key.protocolID) else {
            throw MediaDeviceError(.deviceNotActive, "\(session) is not active")
        }
        // Samples are audio: a device that shows video only (a simulated TV, a renderer that lists
        // a transport stream and no audio format) takes its pictures through RealtimeVideoHandling.
        guard let handler = loaded.instance as? any RealtimeSampleHandling,
            record.route.device.capabilities.contains(.realtimeAudioStreaming)
        else {
            throw MediaDeviceError(.unsupported, "\(record.route.device.displayName) does not take real-time samples")
        }
        if !record.realtime {
            routes[session.id]?.realtime = true
            await ordered(handler) { await $0.startRealtimeSampleDelivery(session: session) }
        }
        return (handler, record.route)
    }

    /// Stops real-time sample delivery on a route (what is queued is dropped).
    public func stopRealtimeSampleDelivery(on session: MediaOutputSession) async {
        endAudioDelivery(session.id)
        guard let record = routes[session.id], record.realtime,
            let handler = loadedExtension(for: record.route.key.protocolID)?.instance as? any RealtimeSampleHandling
        else { return }
        routes[session.id]?.realtime = false
        await ordered(handler) { await $0.stopRealtimeSampleDelivery(session: session) }
    }

    /// Calls a real-time handler after every call asked of its extension before (its
    /// ``ExtensionCallQueue``); directly once the extension is gone.
    func ordered<Value: Sendable>(
        _ handler: any RealtimeSampleHandling, _ body: @escaping @Sendable (any RealtimeSampleHandling) async -> Value
    ) async -> Value {
        guard let calls = extensions.values.first(where: { $0.instance === handler })?.calls else { return await body(handler) }
        return await calls.perform { await body(handler) }
    }

    /// Whether samples are on for the route of `session`.
    func isRealtime(_ session: MediaOutputSession) -> Bool { routes[session.id]?.realtime == true }

    /// The active route of `session`.
    func routes(_ session: MediaOutputSession) -> ActiveRoute? { routes[session.id]?.route }

    /// Tells the extension samples stopped, leaving the ended delivery's statistics readable.
    func stopHandlerKeepingStatistics(_ session: MediaOutputSession) async {
        guard let record = routes[session.id], record.realtime,
            let handler = loadedExtension(for: record.route.key.protocolID)?.instance as? any RealtimeSampleHandling
        else { return }
        routes[session.id]?.realtime = false
        await ordered(handler) { await $0.stopRealtimeSampleDelivery(session: session) }
    }

    // MARK: Volume

    /// Sets an absolute volume on a route's device.
    /// - Throws: volumeControlUnsupported for relative-only or fixed-volume devices,
    ///   invalidArgument for a level that is not a number.
    public func setVolume(_ level: Float, on session: MediaOutputSession) async throws {
        let (route, loaded, device) = try activeRoute(session)
        let level = try VolumeRouting.level(level, on: route.device)
        await loaded.call { await $0.setVolume(level, for: device) }
    }

    /// Raises or lowers a route's volume by steps. Devices with absolute volume get
    /// a new level `configuration.absoluteVolumeStep` per step away.
    public func changeVolume(by increments: Int, on session: MediaOutputSession) async throws {
        let (route, loaded, device) = try activeRoute(session)
        switch try VolumeRouting.change(by: increments, on: route.device, absoluteStep: configuration.absoluteVolumeStep) {
        case .steps(let steps):
            await loaded.call { await $0.changeVolume(by: steps, for: device) }
        case .levelBy(let delta):
            // Read and set in one call, so no other call into the extension comes between.
            await loaded.call { instance in
                let current = await instance.volume(for: device)
                await instance.setVolume(VolumeRouting.clamped(current + delta), for: device)
            }
        }
    }

    /// Mutes or unmutes a route's device.
    public func setMuted(_ muted: Bool, on session: MediaOutputSession) async throws {
        let (route, loaded, device) = try activeRoute(session)
        try VolumeRouting.checkMute(on: route.device)
        await loaded.call { muted ? await $0.muteDevice(device) : await $0.unmuteDevice(device) }
    }

    /// A route's volume (0.0–1.0) and mute state as the extension knows them.
    public func volume(on session: MediaOutputSession) async throws -> (volume: Float, muted: Bool) {
        let (_, loaded, device) = try activeRoute(session)
        return await loaded.call { instance in (await instance.volume(for: device), await instance.isDeviceMuted(device)) }
    }

    private func activeRoute(_ session: MediaOutputSession) throws -> (ActiveRoute, LoadedExtension, MediaOutputDevice) {
        guard let record = routes[session.id], let loaded = loadedExtension(for: record.route.key.protocolID) else {
            throw MediaDeviceError(.deviceNotActive, "\(session) is not active")
        }
        return (record.route, loaded, record.device)
    }

    // MARK: Data channels

    /// Sends data from the app to the route's extension (route data channel).
    /// - Throws: unsupported when the route's extension takes no route data (nothing would receive it).
    public func sendRouteData(_ data: Data, fromApplication application: String, on session: MediaOutputSession) async throws {
        let (route, loaded, _) = try activeRoute(session)
        try SessionRules.checkRouteData(
            receivedByExtension: loaded.instance.receivesRouteData, protocolName: loaded.protocolType.displayName, on: route)
        await loaded.call { await $0.receiveData(data, fromApplication: application, session: session) }
    }

    /// Sends data from the app to the application running the session on the device.
    /// - Throws: sessionFailed when no session with an application runs on the route.
    public func sendSessionData(_ data: Data, on session: MediaOutputSession) async throws {
        let (route, loaded, _) = try activeRoute(session)
        let record = routes[session.id]
        let application = try SessionRules.sessionDataTarget(playing: record?.playback != nil, application: record?.application, on: route)
        await loaded.call { await $0.sendData(data, toApplication: application, session: session) }
    }

    // MARK: Extension reports

    private func startConsumingReports() {
        guard consumer == nil else { return }
        let reports = self.reports
        consumer = Task { [weak self] in
            for await (slot, event) in reports {
                guard let self else { return }
                await self.handle(event, from: slot)
            }
        }
    }

    private func handle(_ event: MediaDeviceRoutingEvent, from slot: Slot) async {
        guard let loaded = extensions[slot] else { return }
        let protocolID = loaded.protocolType.identifier
        func key(_ device: MediaOutputDevice) -> DeviceKey { DeviceKey(protocolID: protocolID, deviceID: device.id) }

        switch event {
        case .foundDevice(let device):
            upsert(device, key: key(device))
        case .updateDevices(let updated):
            for device in updated where devices[key(device)] != nil {
                upsert(device, key: key(device))
            }
        case .lostDevice(let device):
            await remove(key(device))
        case .discoveryFailed(let error):
            logger.warning("discovery failed", metadata: ["protocol": "\(protocolID)", "error": "\(error)"])
            emit(.discoveryFailed(loaded.protocolType, error))
        case .activatedDevice(let device, let session):
            let k = key(device)
            guard activations.isUnderWay(k, for: session) else {
                logger.warning("activation report for no activation", metadata: ["device": "\(k)"])
                return
            }
            let current = devices[k] ?? device
            let route = ActiveRoute(session: session, protocolType: loaded.protocolType, device: OutputDeviceDescription(current))
            finishActivation(k, .success((route, current)))
        case .failedToActivateDevice(let device, let session, let error):
            let k = key(device)
            if activations.isUnderWay(k, for: session) {
                finishActivation(k, .failure(error))
            } else if routes[session.id] != nil {
                // The extension lost an active route (connection gone): end it.
                await endRoute(session.id, reason: error)
            }
        case .requestPairingCode(let device, let session, let reason, let method):
            await pairingRequested(key(device), device: device, session: session, reason: reason, method: method)
        case .started(let application, let control, let session):
            finishStart(session.id, .success((control, application)))
        case .sessionFailed(let session, let error):
            guard var record = routes[session.id] else { return }
            if record.pendingStart != nil {
                finishStart(session.id, .failure(error))
            } else if let control = record.playback {
                record.playback = nil
                record.application = nil
                routes[session.id] = record
                control.finish()
                emit(.sessionEnded(record.route, reason: error))
            } else if record.realtime {
                // A real-time stream the extension could not start or keep going.
                endAudioDelivery(session.id)
                record.realtime = false
                routes[session.id] = record
                emit(.sessionEnded(record.route, reason: error))
            } else if videoRunning(session) {
                emit(.sessionEnded(record.route, reason: error))
            }
            // The route's video (its device stopped showing it): the writer's socket closes.
            if videoRunning(session) { await endVideoDelivery(session, forgetting: false) }
        case .volumeChanged(let device, let volume, let muted):
            let k = key(device)
            let level = volume.isFinite ? min(max(volume, 0), 1) : 0
            for record in routes.values where record.route.key == k {
                emit(.volumeChanged(record.route, volume: level, muted: muted))
            }
        case .routeChanged(let session, let reason):
            if let record = routes[session.id] { emit(.routeChanged(record.route, reason: reason)) }
            // What changed may be the device's latency: a member of a real-time group is led in again.
            if audioDeliveries[session.id]?.group != nil { Task { await self.realignGroupMember(session) } }
        case .sendData(let data, let application, let session):
            if let record = routes[session.id] { emit(.routeData(record.route, application: application, data: data)) }
        case .receivedData(let data, let application, let session):
            if let record = routes[session.id] { emit(.sessionData(record.route, application: application, data: data)) }
        }
    }

    private func upsert(_ device: MediaOutputDevice, key: DeviceKey) {
        announce(directory.upsert(device, key: key))
    }

    /// Emits the device events for what the directory changed (lost entries by their last state).
    private func announce(
        _ changes: [DeviceDirectory.Change], lostAs lastSeen: [String: SystemDevice] = [:], formerNames: Set<String> = []
    ) {
        guard !changes.isEmpty else { return }
        func current(_ id: String) -> SystemDevice? { directory.entry(withID: id).flatMap(presented) }
        // Entries that share a name with a changed one may have gained or lost their suffix.
        var touched: Set<String> = []
        var names = formerNames
        for change in changes {
            let id: String
            switch change {
            case .found(let value), .updated(let value), .lost(let value): id = value
            }
            touched.insert(id)
            if let name = directory.mergeName(ofEntry: id) {
                names.insert(name)
            }
        }
        defer {
            // Only when a name is shared: then the others may have gained or lost their suffix.
            let somethingLeft = changes.contains { if case .lost = $0 { true } else { false } }
            if names.contains(where: { directory.entryCount(named: $0) > 1 || (somethingLeft && directory.entryCount(named: $0) == 1) }) {
                for entry in directory.orderedEntries where !touched.contains(entry.id) {
                    guard let name = directory.mergeName(ofEntry: entry.id), names.contains(name), let device = presented(entry) else { continue }
                    emit(.deviceUpdated(device))
                }
            }
        }
        for change in changes {
            switch change {
            case .found(let id): if let device = current(id) { emit(.deviceFound(device)) }
            case .updated(let id): if let device = current(id) { emit(.deviceUpdated(device)) }
            case .lost(let id):
                if let device = lastSeen[id] {
                    emit(.deviceLost(device))
                } else {
                    emit(.deviceLost(SystemDevice(id: id, displayName: id, members: [])))
                }
                preferredProtocolByDevice[id] = nil
            }
        }
    }

    private func remove(_ key: DeviceKey) async {
        guard let before = device(containing: key) else { return }
        if activations.contains(key) {
            finishActivation(key, .failure(MediaDeviceError(.deviceLost, "\(before.displayName) disappeared")))
        }
        for record in routes.values where record.route.key == key {
            await endRoute(record.route.session.id, reason: MediaDeviceError(.deviceLost, "\(before.displayName) disappeared"))
        }
        let formerName = directory.mergeName(ofEntry: before.id)
        announce(directory.remove(key), lostAs: [before.id: before], formerNames: formerName.map { [$0] } ?? [])
    }

    private func endRoute(_ id: UUID, reason: MediaDeviceError?) async {
        guard let record = routes[id], let loaded = loadedExtension(for: record.route.key.protocolID) else { return }
        let route = record.route
        emit(.activationStateChanged(route.key, session: route.session, state: .deactivating))
        routes[id] = nil
        record.startTimeout?.cancel()
        record.pendingStart?.resume(throwing: reason ?? MediaDeviceError(.cancelled, "the route was deactivated"))
        if let control = record.playback {
            control.finish()
            emit(.sessionEnded(route, reason: reason))
            await loaded.call { await $0.stopSession(route.session) }
        }
        endAudioDelivery(id, forgetting: true)
        await endVideoDelivery(route.session, forgetting: true, via: loaded)
        realtimeNowPlaying[id] = nil
        if record.realtime, let handler = loaded.instance as? any RealtimeSampleHandling {
            await ordered(handler) { await $0.stopRealtimeSampleDelivery(session: route.session) }
        }
        await loaded.call { await $0.deactivateDevice(record.device, session: route.session) }
        emit(.activationStateChanged(route.key, session: route.session, state: .idle))
        emit(.routeDeactivated(route, reason: reason))
        if let entry = device(containing: route.key) { emit(.deviceUpdated(entry)) }
    }
}

extension RouteSystem: SystemRoutingBackend {}
