public import DBus
public import Logging
public import MediaClock
import Synchronization
public import Transport

/// BLE devices through BlueZ: discovery with our own filter, connection with the
/// retries BlueZ needs, pairing, and GATT access.
///
/// Discovery sets `SetDiscoveryFilter` (LE, our service UUIDs, RSSI threshold,
/// no duplicate data) and `StartDiscovery`; BlueZ merges filters of every client,
/// so each device is checked against our own filter before it is reported.
/// Stopping discovery stops it and clears the filter. Adapters: the configured
/// one (by name) or the first powered one; `Powered`, adapters coming and going,
/// and bluetoothd restarting all restart discovery.
public actor BlueZTransport: Transport {
    public struct Configuration: Sendable {
        /// The adapter to use (`hci0`), waited for by name; nil: one chosen by ``preferredAdapterNames``
        /// and ``ignoredAdapterNames``, so that when it goes (a dongle unplugged, or plugged again as
        /// `hci1`) another is used.
        public var adapterName: String?
        /// Adapters never used without ``adapterName`` (the box's udev rules disabled them).
        public var ignoredAdapterNames: Set<String>
        /// Adapters chosen before the others without ``adapterName`` (udev's `primary` role); the
        /// others (`secondary`, `standby`) are chosen when none of these is there. The adapter in
        /// use stays until it goes.
        public var preferredAdapterNames: Set<String>
        /// Service UUIDs of interest (128-bit, lowercase).
        public var serviceUUIDs: [String]
        /// The codecs of MediaRoute's A2DP source endpoints, most preferred first, registered
        /// with BlueZ in that order; none where PipeWire or bluez-alsa is the box's A2DP source
        /// (a box has one).
        public var a2dpSources: [A2DPSourceCodec]
        /// Registers none on an adapter where another A2DP source (PipeWire's bluez5 plugin,
        /// bluez-alsa) registered first, and takes the role when it goes (`a2dp-source = auto`).
        public var a2dpSourceStepsAside: Bool
        /// The first of ``a2dpSources``.
        public var a2dpSource: A2DPSourceCodec? { a2dpSources.first }
        /// Devices weaker than this (dBm) are not reported.
        public var rssiThreshold: Int16?
        /// Connect attempts for `InProgress` and `le-connection-abort-by-local`.
        public var connectAttempts: Int
        /// First pause between attempts; it doubles.
        public var retryDelay: Duration
        /// Longest wait for `ServicesResolved`.
        public var servicesResolvedTimeout: Duration

        public static let defaultServiceUUIDs = [
            BlueZ.volumeControlService, BlueZ.publishedAudioCapabilities, BlueZ.audioStreamControl, BlueZ.audioSink,
        ]

        public init(
            adapterName: String? = nil, ignoredAdapterNames: Set<String> = [], preferredAdapterNames: Set<String> = [], serviceUUIDs: [String] = Configuration.defaultServiceUUIDs, vendorUUIDs: [String] = [],
            rssiThreshold: Int16? = -90, connectAttempts: Int = 4, retryDelay: Duration = .milliseconds(100),
            servicesResolvedTimeout: Duration = .seconds(10), a2dpSource: A2DPSourceCodec? = nil, a2dpSources: [A2DPSourceCodec] = [],
            a2dpSourceStepsAside: Bool = false
        ) {
            self.a2dpSourceStepsAside = a2dpSourceStepsAside
            self.a2dpSources = a2dpSources.isEmpty ? (a2dpSource.map { [$0] } ?? []) : a2dpSources
            self.adapterName = adapterName
            self.ignoredAdapterNames = ignoredAdapterNames
            self.preferredAdapterNames = preferredAdapterNames
            self.serviceUUIDs = (serviceUUIDs + vendorUUIDs).map { $0.lowercased() }
            self.rssiThreshold = rssiThreshold
            self.connectAttempts = connectAttempts
            self.retryDelay = retryDelay
            self.servicesResolvedTimeout = servicesResolvedTimeout
        }
    }

    public nonisolated let name = "bluez"
    public nonisolated let objectManager: BlueZObjectManager
    public nonisolated let configuration: Configuration
    private let connection: DBusConnection
    private let clock: any HostClock
    private let logger: Logger
    private var agent: BlueZAgent?
    /// Who is the A2DP source on each adapter MediaRoute registered with (or stepped aside on).
    private var a2dpOwners: [DBusObjectPath: A2DPSourceOwner] = [:]
    /// MediaRoute's A2DP source endpoints, once registered (``Configuration/a2dpSources``), in order.
    public private(set) var a2dpSources: [A2DPSourceEndpoint] = []
    /// The first (most preferred) endpoint.
    public var a2dpSource: A2DPSourceEndpoint? { a2dpSources.first }

    /// The configuration BlueZ set for `transport` with one of our endpoints, and that endpoint's codec.
    public func a2dpConfiguration(of transport: DBusObjectPath) async -> (codec: A2DPSourceCodec, configuration: [UInt8])? {
        for endpoint in a2dpSources {
            if let configuration = await endpoint.configuration(of: transport) { return (endpoint.codec, configuration) }
        }
        return nil
    }
    /// Where the agent's questions go: to the handler of the pairing under way for the asking device.
    private let prompts = PairingPromptRouter()

    public init(objectManager: BlueZObjectManager, configuration: Configuration = Configuration(), clock: any HostClock = SystemHostClock(),
                logger: Logger = Logger(label: "mediaroute.bluez")) {
        self.objectManager = objectManager
        self.connection = objectManager.connection
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
    }

    // MARK: Adapters

    /// The adapter discovery and connections use.
    public func adapter() async -> DBusObjectPath? {
        let all = await objectManager.paths(implementing: BlueZ.adapter)
        if let name = configuration.adapterName { return all.first { Self.isAdapter($0, named: [name]) } }
        let usable = all.filter { !Self.isAdapter($0, named: configuration.ignoredAdapterNames) }
        // Preferred ones first, then the others; powered before unpowered within each.
        let ordered = usable.filter { Self.isAdapter($0, named: configuration.preferredAdapterNames) }
            + usable.filter { !Self.isAdapter($0, named: configuration.preferredAdapterNames) }
        for path in ordered where await objectManager.properties(of: path, BlueZ.adapter)?["Powered"]?.bool == true {
            return path
        }
        return ordered.first
    }

    /// Whether `path` is the adapter object of one of `names` (`/org/bluez/hci0` for `hci0`).
    static func isAdapter(_ path: DBusObjectPath, named names: Set<String>) -> Bool {
        names.contains { path.rawValue.hasSuffix("/" + $0) }
    }

    // MARK: Discovery

    /// Whether a device passes our own filter (BlueZ merged other clients' filters into its own).
    public nonisolated func matches(_ properties: BlueZProperties) -> Bool {
        matches(services: Self.services(of: properties), rssi: properties["RSSI"]?.integer, audioVideo: Self.isAudioVideo(properties))
    }

    /// Whether a device's endpoint passes our own filter.
    public nonisolated func matches(_ endpoint: Endpoint) -> Bool {
        matches(services: endpoint.services, rssi: endpoint.signalStrength.map(Int64.init), audioVideo: endpoint.facts.bluetoothMajorClass == .audioVideo)
    }

    /// Whether a Classic device's Class of Device has the Audio/Video major class (0x04, bits 12…8):
    /// speakers that put no service UUID in their inquiry response still say what they are there.
    static func isAudioVideo(_ properties: BlueZProperties) -> Bool {
        guard let value = properties["Class"]?.integer else { return false }
        return (value >> 8) & 0x1F == 0x04
    }

    private nonisolated func matches(services: [String], rssi: Int64?, audioVideo: Bool) -> Bool {
        let wanted = configuration.serviceUUIDs
        guard audioVideo || services.contains(where: { wanted.contains($0) }) else { return false }
        if let threshold = configuration.rssiThreshold, let rssi, rssi < Int64(threshold) { return false }
        return true
    }

    /// The endpoint of a device object.
    public static func endpoint(path: DBusObjectPath, properties: BlueZProperties) -> Endpoint? {
        guard let address = properties["Address"]?.string else { return nil }
        // The adapter's name is the path's last element (bytes: no grapheme breaking for a `/`).
        let adapter = properties["Adapter"]?.string.map { path in
            path.utf8.lastIndex(of: UInt8(ascii: "/")).map { String(decoding: path.utf8[path.utf8.index(after: $0)...], as: UTF8.self) } ?? path
        } ?? ""
        var attributes = [String: String](minimumCapacity: 2)
        if let type = properties["AddressType"]?.string { attributes["addressType"] = type }
        if properties["Paired"]?.bool == true { attributes["paired"] = "1" }
        return Endpoint(
            id: address, transport: "bluez", address: .bluetooth(address: address, adapter: adapter, object: path.rawValue),
            name: properties["Alias"]?.string ?? properties["Name"]?.string,
            signalStrength: properties["RSSI"]?.integer.map { Int($0) }, attributes: attributes,
            services: services(of: properties), facts: EndpointFacts(bluetoothMajorClass: isAudioVideo(properties) ? .audioVideo : nil))
    }

    /// A device's service UUIDs, in lower case.
    private static func services(of properties: BlueZProperties) -> [String] {
        (properties["UUIDs"]?.array ?? []).compactMap { $0.string.map(BlueZ.lowercased) }
    }

    public nonisolated func discover() -> DiscoveryEvents {
        DiscoveryEvents { continuation in
            let task = Task { await self.runDiscovery(continuation) }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    private func startDiscovery(on adapter: DBusObjectPath) async {
        await registerA2DPSource(on: adapter)
        // `auto`: LE for VCS/LE Audio devices and BR/EDR inquiry for Classic A2DP speakers,
        // which are most speakers sold.
        var filter: [String: DBusValue] = [
            "Transport": .string("auto"), "UUIDs": .strings(configuration.serviceUUIDs), "DuplicateData": .bool(false),
        ]
        if let threshold = configuration.rssiThreshold { filter["RSSI"] = .int16(threshold) }
        do {
            _ = try await connection.call(destination: BlueZ.busName, path: adapter, interface: BlueZ.adapter, member: "SetDiscoveryFilter", [.properties(filter)])
            _ = try await connection.call(destination: BlueZ.busName, path: adapter, interface: BlueZ.adapter, member: "StartDiscovery")
            logger.debug("discovery started", metadata: ["adapter": "\(adapter)"])
        } catch where BlueZError(error).kind == .inProgress {
            // Already discovering (another client, or us before a restart): fine.
        } catch {
            logger.warning("discovery not started", metadata: ["adapter": "\(adapter)", "error": "\(error)"])
        }
    }

    private func stopDiscovery(on adapter: DBusObjectPath) async {
        _ = try? await connection.call(destination: BlueZ.busName, path: adapter, interface: BlueZ.adapter, member: "StopDiscovery")
        _ = try? await connection.call(destination: BlueZ.busName, path: adapter, interface: BlueZ.adapter, member: "SetDiscoveryFilter", [.properties([:])])
    }

    /// Devices are judged as BlueZ's signals arrive, on the reactor thread
    /// (``BlueZObjectManager/snapshotAndObserve(_:)``), and reported from there:
    /// a burst of devices costs no task hand-offs. Adapter changes, which need
    /// D-Bus calls, go to this task.
    private func runDiscovery(_ continuation: DiscoveryEvents.Continuation) async {
        let reporter = DiscoveryReporter(transport: self, continuation: continuation)
        let (adapterEvents, adapterContinuation) = AsyncStream.makeStream(of: BlueZObjectManager.Event.self)
        let (_, observation) = objectManager.snapshotAndObserve { event, objects in
            switch event {
            case .added(let path, let interfaces):
                if let device = interfaces[BlueZ.device] { reporter.consider(path, device) }
                if interfaces[BlueZ.adapter] != nil { adapterContinuation.yield(event) }
            case .changed(let path, let interface, let changed):
                if interface == BlueZ.device, changed.keys.contains(where: { ["RSSI", "UUIDs", "Name", "Alias", "Paired"].contains($0) }),
                    let properties = objects[path]?[BlueZ.device] {
                    reporter.consider(path, properties)
                } else if interface == BlueZ.adapter {
                    adapterContinuation.yield(event)
                }
            case .removed(let path, let interfaces):
                if interfaces.contains(BlueZ.device) { reporter.lose(path) }
                if interfaces.contains(BlueZ.adapter) { adapterContinuation.yield(event) }
            case .vanished, .restarted:
                adapterContinuation.yield(event)
            }
        }
        defer { observation.cancel() }
        func considerDevices(below adapter: DBusObjectPath) async {
            for (path, interfaces) in await objectManager.objects.sorted(by: { $0.key < $1.key }) {
                if let device = interfaces[BlueZ.device] { reporter.consider(path, device) }
            }
        }
        var adapter = await self.adapter()
        // From here the observer reports devices of this adapter; those already
        // in the cache are reported at once (bleak waits for an RSSI change).
        reporter.setAdapter(adapter)
        if let adapter {
            await startDiscovery(on: adapter)
            await considerDevices(below: adapter)
        } else {
            logger.notice("no Bluetooth adapter yet; waiting for one")
        }
        for await event in adapterEvents {
            if Task.isCancelled { break }
            switch event {
            case .added(let path, _):
                if adapter == nil ? await self.adapter() == path : configuration.adapterName.map({ Self.isAdapter(path, named: [$0]) }) == true {
                    adapter = path
                    reporter.setAdapter(path)
                    await startDiscovery(on: path)
                    await considerDevices(below: path)
                }
            case .changed(let path, _, let changed):
                if changed["UUIDs"] != nil { await adapterServicesChanged(path) }
                if path == adapter, let powered = changed["Powered"]?.bool {
                    if powered {
                        await startDiscovery(on: path)
                    } else {
                        logger.notice("adapter powered off", metadata: ["adapter": "\(path)"])
                    }
                }
            case .removed(let path, _):
                if path == adapter {
                    logger.warning("adapter removed", metadata: ["adapter": "\(path)"])
                    reporter.loseAll()
                    adapter = await self.adapter()
                    reporter.setAdapter(adapter)
                    if let adapter {
                        await startDiscovery(on: adapter)
                        await considerDevices(below: adapter)
                    }
                }
            case .vanished:
                forgetA2DPOwners()
                reporter.loseAll()
            case .restarted:
                forgetA2DPOwners()
                adapter = await self.adapter()
                reporter.setAdapter(adapter)
                if let adapter {
                    await startDiscovery(on: adapter)
                    await considerDevices(below: adapter)
                }
            }
        }
        if let adapter { await stopDiscovery(on: adapter) }
        continuation.finish()
    }

    /// `AA:BB:…` from `/org/bluez/hci0/dev_AA_BB_…`.
    static func address(from path: DBusObjectPath) -> String? {
        guard let last = path.rawValue.split(separator: "/").last, last.hasPrefix("dev_") else { return nil }
        return String(last.dropFirst(4).map { $0 == "_" ? ":" : $0 })
    }

    /// The devices discovery would report now: BlueZ's, below the adapter in use, passing our filter.
    public func presentEndpointIDs() async -> Set<String>? {
        guard let adapter = await adapter() else { return [] }
        var ids: Set<String> = []
        for (path, interfaces) in await objectManager.objects where path.isDescendant(of: adapter) {
            if let properties = interfaces[BlueZ.device], let endpoint = Self.endpoint(path: path, properties: properties), matches(endpoint) {
                ids.insert(endpoint.id)
            }
        }
        return ids
    }

    // MARK: Connecting

    /// The device object of an endpoint.
    public nonisolated func devicePath(for endpoint: Endpoint) -> DBusObjectPath? {
        guard case .bluetooth(_, _, let object) = endpoint.address else { return nil }
        return DBusObjectPath(object)
    }

    /// Connects the device (``connectDevice(_:)``) and gives a link that offers GATT,
    /// the device's audio transport and pairing.
    public func connect(to endpoint: Endpoint) async throws(TransportError) -> any Connection {
        guard let path = devicePath(for: endpoint) else { throw TransportError(.unreachable, "\(endpoint.id) is not a BlueZ device") }
        try await connectDevice(path)
        return await BlueZLink(endpoint: endpoint, path: path, transport: self)
    }

    /// `Device1.Connect` (skipped when already connected), retried with backoff on
    /// `InProgress` and `le-connection-abort-by-local` (after `Connected` went
    /// false), then waits for `ServicesResolved` while watching for the link
    /// dropping or the device vanishing.
    public func connectDevice(_ path: DBusObjectPath) async throws(TransportError) {
        if let adapter = await objectManager.properties(of: path, BlueZ.device)?["Adapter"]?.objectPath {
            await registerA2DPSource(on: adapter)
        }
        let events = await objectManager.events()
        guard let properties = await objectManager.properties(of: path, BlueZ.device) else {
            throw TransportError(.unreachable, "\(path) is not known to BlueZ")
        }
        if properties["Connected"]?.bool == true && properties["ServicesResolved"]?.bool == true { return }
        var delay = configuration.retryDelay
        var attempt = 0
        while true {
            attempt += 1
            do {
                if await objectManager.properties(of: path, BlueZ.device)?["Connected"]?.bool != true {
                    _ = try await connection.call(destination: BlueZ.busName, path: path, interface: BlueZ.device, member: "Connect", timeout: .seconds(30))
                    // BlueZ's signals are read on another connection: let them catch up with the reply.
                    await objectManager.synchronize()
                }
                break
            } catch {
                let failure = BlueZError(error)
                let retryable = failure.kind == .inProgress || failure.isLocalConnectionAbort
                guard retryable, attempt < configuration.connectAttempts else {
                    throw TransportError(failure.kind == .inProgress ? .timedOut : .connectionRefused, "Connect: \(failure)")
                }
                logger.info("connect retry", metadata: ["device": "\(path)", "attempt": "\(attempt)", "error": "\(failure.message)"])
                if failure.isLocalConnectionAbort {
                    // The aborted link reports Connected=true, then false: wait for that false,
                    // not for a cache that may not have seen the true yet.
                    try await waitFor(path, events: events, timeout: .seconds(2), checkCacheFirst: false) { $0["Connected"]?.bool != true }
                }
                try? await clock.sleep(for: delay)
                delay = delay * 2
            }
        }
        try await waitFor(path, events: events, timeout: configuration.servicesResolvedTimeout, failWhenDisconnected: true) {
            $0["ServicesResolved"]?.bool == true
        }
        await connectAudioSink(path)
    }

    /// Waits until `condition` holds for the device's properties.
    private func waitFor(
        _ path: DBusObjectPath, events: AsyncStream<BlueZObjectManager.Event>, timeout: Duration, failWhenDisconnected: Bool = false,
        checkCacheFirst: Bool = true, _ condition: @escaping @Sendable (BlueZProperties) -> Bool
    ) async throws(TransportError) {
        if checkCacheFirst, let properties = await objectManager.properties(of: path, BlueZ.device), condition(properties) { return }
        let clock = self.clock
        let deadline = clock.now() + timeout
        let outcome: TransportError? = await withTaskGroup(of: TransportError?.self) { group in
            group.addTask {
                for await event in events {
                    switch event {
                    case .changed(let changedPath, BlueZ.device, let changed) where changedPath == path:
                        if !checkCacheFirst {
                            // Judge each Connected change by itself: the cache may already be past
                            // it, and an earlier change judged by the cache would leave this one
                            // queued for the next wait.
                            if changed["Connected"] != nil, condition(BlueZProperties(changed)) { return nil }
                            continue
                        }
                        if failWhenDisconnected, changed["Connected"]?.bool == false {
                            return TransportError(.connectionLost, "\(path) disconnected before its services were resolved")
                        }
                        if let properties = await self.objectManager.properties(of: path, BlueZ.device), condition(properties) { return nil }
                    case .removed(let removedPath, let interfaces) where removedPath == path && interfaces.contains(BlueZ.device):
                        return TransportError(.unreachable, "\(path) was removed")
                    case .vanished:
                        return TransportError(.connectionLost, "bluetoothd left the bus")
                    default:
                        continue
                    }
                }
                return TransportError(.connectionLost, "stopped following BlueZ")
            }
            group.addTask {
                try? await clock.sleep(until: deadline)
                return TransportError(.timedOut, "\(path): no answer in \(timeout)")
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        if let outcome { throw outcome }
    }

    public func disconnectDevice(_ path: DBusObjectPath) async {
        _ = try? await connection.call(destination: BlueZ.busName, path: path, interface: BlueZ.device, member: "Disconnect")
        await objectManager.synchronize()
    }

    // MARK: A2DP

    /// Registers the A2DP source endpoints with `adapter`, most preferred first (when configured; once per adapter and
    /// BlueZ instance: BlueZ's `AlreadyExists` counts as done). A failure is logged: LE devices
    /// work without it.
    func registerA2DPSource(on adapter: DBusObjectPath) async {
        guard !configuration.a2dpSources.isEmpty else { return }
        if a2dpSources.isEmpty {
            a2dpSources = configuration.a2dpSources.map { A2DPSourceEndpoint(connection: connection, codec: $0, logger: logger) }
        }
        // bluetoothd lists the A2DP Source service on the adapter once any client registered a
        // source endpoint there (its SDP record), and takes it away when the last one goes.
        if configuration.a2dpSourceStepsAside, a2dpOwners[adapter] != .mediaRoute,
            let properties = await objectManager.properties(of: adapter, BlueZ.adapter), Self.services(of: properties).contains(BlueZ.audioSource)
        {
            if a2dpOwners.updateValue(.another, forKey: adapter) != .another {
                logger.notice(
                    "another A2DP source is registered with BlueZ (PipeWire's bluez5 plugin or bluez-alsa): MediaRoute registers none and streams to the speakers that source sets up; it takes the role when that source goes ([bluetooth] a2dp-source = yes to register beside it)",
                    metadata: ["adapter": "\(adapter)"])
            }
            return
        }
        var registered = 0
        for endpoint in a2dpSources {
            do {
                try await endpoint.register(on: adapter)
                registered += 1
            } catch {
                logger.warning("A2DP source endpoint not registered", metadata: ["adapter": "\(adapter)", "codec": "\(endpoint.codec.name)", "error": "\(error)"])
            }
        }
        guard registered > 0 else { return }
        if a2dpOwners.updateValue(.mediaRoute, forKey: adapter) == .another {
            logger.notice("the other A2DP source left: MediaRoute is the box's A2DP source again", metadata: ["adapter": "\(adapter)"])
        }
    }

    /// Who is the A2DP source on an adapter, as far as MediaRoute knows.
    public enum A2DPSourceOwner: Sendable, Hashable {
        /// MediaRoute's endpoints are registered.
        case mediaRoute
        /// Another source registered first; MediaRoute stepped aside (`a2dp-source = auto`).
        case another
    }

    /// Who is the A2DP source on `adapter`; nil before MediaRoute looked (or with `a2dp-source = no`).
    public func a2dpSourceOwner(on adapter: DBusObjectPath) -> A2DPSourceOwner? {
        a2dpOwners[adapter]
    }

    /// The adapter's services changed: where MediaRoute stepped aside, the other source may have gone.
    private func adapterServicesChanged(_ adapter: DBusObjectPath) async {
        guard a2dpOwners[adapter] == .another else { return }
        await registerA2DPSource(on: adapter)
    }

    /// bluetoothd restarted or left: every registration with it is gone.
    private func forgetA2DPOwners() {
        a2dpOwners = [:]
    }

    /// Connects the A2DP sink profile of a Classic speaker (`ConnectProfile`): `Connect` alone
    /// may bring up another profile first, or none when the speaker was last used by a phone.
    private func connectAudioSink(_ path: DBusObjectPath) async {
        guard let properties = await objectManager.properties(of: path, BlueZ.device),
            Self.services(of: properties).contains(BlueZ.audioSink)
        else { return }
        do {
            _ = try await connection.call(
                destination: BlueZ.busName, path: path, interface: BlueZ.device, member: "ConnectProfile", [.string(BlueZ.audioSink)],
                timeout: .seconds(30))
        } catch where BlueZError(error).kind == .alreadyConnected || BlueZError(error).kind == .inProgress {
            return
        } catch {
            logger.warning("A2DP sink profile not connected", metadata: ["device": "\(path)", "error": "\(error)"])
        }
    }

    // MARK: Pairing

    /// Registers MediaRoute's pairing agent with BlueZ (once; the agent registers
    /// again by itself after a bluetoothd restart). Its questions go to the handler
    /// of the ``pair(_:answering:)`` under way for the device that asks, and are
    /// refused for any other device.
    public func registerPairingAgent() async throws(TransportError) {
        guard agent == nil else { return }
        let agent = BlueZAgent(connection: connection, handler: prompts)
        do {
            try await agent.register()
        } catch {
            throw TransportError(.unavailable, "the pairing agent was not registered: \(error)")
        }
        self.agent = agent
    }

    /// `Device1.Pair` with the device's questions going to `handler` (the device is not marked `Trusted`).
    /// - Throws: `authenticationFailed` with BlueZ's reason for AuthenticationFailed/Rejected/Canceled;
    ///   `timedOut` for AuthenticationTimeout; `connectionLost` when the device went away.
    public func pair(_ path: DBusObjectPath, answering handler: any PairingPromptHandler) async throws(TransportError) {
        if await objectManager.properties(of: path, BlueZ.device)?["Paired"]?.bool != true {
            try await registerPairingAgent()
            await prompts.route(path, to: handler)
            var failure: BlueZError?
            do {
                _ = try await connection.call(destination: BlueZ.busName, path: path, interface: BlueZ.device, member: "Pair", timeout: .seconds(90))
            } catch where BlueZError(error).kind == .alreadyExists {
                // Paired meanwhile.
            } catch {
                failure = BlueZError(error)
            }
            await prompts.route(path, to: nil)
            if let failure {
                switch failure.kind {
                case .authenticationTimeout: throw TransportError(.timedOut, "pairing: \(failure)")
                case .doesNotExist, .notConnected: throw TransportError(.connectionLost, "pairing: \(failure)")
                default: throw TransportError(.authenticationFailed, "pairing: \(failure)")
                }
            }
        }
        // Not `Trusted`: BlueZ would then let the device open any service without asking the agent,
        // which grants only the audio profiles (ServiceAuthorization). When this returns, the cache shows Paired.
        await objectManager.synchronize()
    }

    // MARK: GATT

    /// The characteristic with `uuid` below a device (found once services are resolved, or later).
    public func characteristic(_ uuid: String, of device: DBusObjectPath) async -> DBusObjectPath? {
        for path in await objectManager.paths(implementing: BlueZ.gattCharacteristic, below: device) {
            if await objectManager.properties(of: path, BlueZ.gattCharacteristic)?["UUID"]?.string?.lowercased() == uuid.lowercased() { return path }
        }
        return nil
    }

    /// Waits (up to `timeout`) for a characteristic that may appear after `ServicesResolved`.
    public func waitForCharacteristic(_ uuid: String, of device: DBusObjectPath, timeout: Duration = .seconds(5)) async -> DBusObjectPath? {
        let events = await objectManager.events()
        if let found = await characteristic(uuid, of: device) { return found }
        let clock = self.clock
        let deadline = clock.now() + timeout
        return await withTaskGroup(of: DBusObjectPath?.self) { group in
            group.addTask {
                for await event in events {
                    if case .added(let path, let interfaces) = event, path.isDescendant(of: device),
                        interfaces[BlueZ.gattCharacteristic]?["UUID"]?.string?.lowercased() == uuid.lowercased() {
                        return path
                    }
                }
                return nil
            }
            group.addTask {
                try? await clock.sleep(until: deadline)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    public func readValue(_ characteristic: DBusObjectPath) async throws(BlueZError) -> [UInt8] {
        let reply = try await call(characteristic, BlueZ.gattCharacteristic, "ReadValue", [.properties([:])])
        return reply.first?.bytes ?? []
    }

    /// Writes a value, with a response (`request`) or without (`command`).
    public func writeValue(_ characteristic: DBusObjectPath, _ value: [UInt8], withResponse: Bool = true) async throws(BlueZError) {
        _ = try await call(
            characteristic, BlueZ.gattCharacteristic, "WriteValue",
            [.bytes(value), .properties(["type": .string(withResponse ? "request" : "command")])])
    }

    /// A call to BlueZ whose failure is a ``BlueZError``.
    private func call(_ path: DBusObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue] = []) async throws(BlueZError) -> [DBusValue] {
        do {
            return try await connection.call(destination: BlueZ.busName, path: path, interface: interface, member: member, arguments)
        } catch {
            throw BlueZError(error)
        }
    }

    /// `StartNotify`, then the `Value` of every notification (from `PropertiesChanged`).
    public func notifications(_ characteristic: DBusObjectPath) async throws(BlueZError) -> AsyncStream<[UInt8]> {
        let events = await objectManager.events()
        _ = try await call(characteristic, BlueZ.gattCharacteristic, "StartNotify")
        return Self.follow(characteristic, BlueZ.gattCharacteristic, in: events) { change, continuation in
            if case .changed(let properties) = change, let value = properties["Value"]?.bytes { continuation.yield(value) }
        }
    }

    /// What happens to one object's interface, as BlueZ signals it.
    enum ObjectChange {
        case changed([String: DBusValue])
        /// The object (or this interface of it) was removed, or bluetoothd left the bus: the last change.
        case gone
    }

    /// Follows `interface` of the object at `path` in `events`: `handle` gets each property
    /// change, then `gone` when the object goes or BlueZ leaves, and the stream finishes.
    static func follow<Element: Sendable>(
        _ path: DBusObjectPath, _ interface: String, in events: AsyncStream<BlueZObjectManager.Event>,
        _ handle: @escaping @Sendable (ObjectChange, AsyncStream<Element>.Continuation) -> Void
    ) -> AsyncStream<Element> {
        AsyncStream { continuation in
            let task = Task {
                for await event in events {
                    switch event {
                    case .changed(path, interface, let properties):
                        handle(.changed(properties), continuation)
                    case .removed(path, let interfaces) where interfaces.contains(interface):
                        handle(.gone, continuation)
                        continuation.finish()
                        return
                    case .vanished:
                        handle(.gone, continuation)
                        continuation.finish()
                        return
                    default:
                        continue
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// `AcquireNotify`: a socket that carries every notification as one packet, and its MTU
    /// (cheaper than `PropertiesChanged` for fast streams).
    public func acquireNotify(_ characteristic: DBusObjectPath) async throws(BlueZError) -> (fd: DBusFileDescriptor, mtu: Int) {
        try await acquire("AcquireNotify", characteristic)
    }

    /// `AcquireWrite`: a socket to write values to, and its MTU.
    public func acquireWrite(_ characteristic: DBusObjectPath) async throws(BlueZError) -> (fd: DBusFileDescriptor, mtu: Int) {
        try await acquire("AcquireWrite", characteristic)
    }

    private func acquire(_ member: String, _ characteristic: DBusObjectPath) async throws(BlueZError) -> (fd: DBusFileDescriptor, mtu: Int) {
        let reply = try await call(characteristic, BlueZ.gattCharacteristic, member, [.properties([:])])
        guard reply.count == 2, case .unixFD(let fd) = reply[0], let mtu = reply[1].integer else {
            throw BlueZError(failed: "\(member): unexpected reply")
        }
        return (fd, Int(mtu))
    }
}

extension BlueZTransport {
    /// The audio transport below a device, when the speaker has one.
    public func mediaTransport(of device: DBusObjectPath) async -> BlueZMediaTransport? {
        for path in await objectManager.paths(implementing: BlueZ.mediaTransport, below: device) {
            if let properties = await objectManager.properties(of: path, BlueZ.mediaTransport) {
                return BlueZMediaTransport(path: path, properties: properties)
            }
        }
        return nil
    }

    /// `Volume` changes of an audio transport, as fractions of its scale.
    public func mediaTransportVolumes(_ transport: BlueZMediaTransport) async -> AsyncStream<Float> {
        let events = await objectManager.events()
        let scale = transport.volumeScale
        return Self.follow(transport.path, BlueZ.mediaTransport, in: events) { change, continuation in
            if case .changed(let properties) = change, let raw = properties["Volume"]?.integer { continuation.yield(Float(raw) / scale) }
        }
    }

    /// The transport's `State` each time it changes, ending with `gone` when the object is
    /// removed (the profile disconnected, the device went) or bluetoothd leaves the bus.
    public func mediaTransportStates(_ transport: BlueZMediaTransport) async -> AsyncStream<AudioStreamState> {
        let events = await objectManager.events()
        guard await objectManager.properties(of: transport.path, BlueZ.mediaTransport) != nil else {
            return AsyncStream {
                $0.yield(.gone)
                $0.finish()
            }
        }
        return Self.follow(transport.path, BlueZ.mediaTransport, in: events) { change, continuation in
            switch change {
            case .changed(let properties): if let state = properties["State"]?.string { continuation.yield(Self.audioStreamState(state)) }
            case .gone: continuation.yield(.gone)
            }
        }
    }

    /// `MediaTransport1.State`: `idle`, `pending`, `active` (and `broadcasting`/`broadcastable`
    /// for LE Audio broadcast, which stream or can, as `active` and `pending` do).
    static func audioStreamState(_ state: String) -> AudioStreamState {
        switch state {
        case "active", "broadcasting": .active
        case "pending", "broadcastable": .pending
        default: .idle
        }
    }

    /// Sets `Volume` from a fraction 0.0–1.0 of the transport's scale.
    public func setVolume(_ fraction: Float, on transport: BlueZMediaTransport) async throws(BlueZError) {
        let raw = UInt16((min(max(fraction, 0), 1) * transport.volumeScale).rounded())
        do {
            _ = try await objectManager.connection.call(
                destination: BlueZ.busName, path: transport.path, interface: "org.freedesktop.DBus.Properties", member: "Set",
                [.string(BlueZ.mediaTransport), .string("Volume"), .variant(.uint16(raw))])
        } catch {
            throw BlueZError(error)
        }
    }

    /// `Acquire`: the socket encoded audio goes to, and the MTU for writing.
    public func acquire(_ transport: BlueZMediaTransport) async throws(BlueZError) -> (fd: DBusFileDescriptor, writeMTU: Int) {
        let reply: [DBusValue]
        do {
            reply = try await objectManager.connection.call(destination: BlueZ.busName, path: transport.path, interface: BlueZ.mediaTransport, member: "Acquire")
        } catch {
            throw BlueZError(error)
        }
        guard reply.count == 3, case .unixFD(let fd) = reply[0], let outgoing = reply[2].integer else {
            throw BlueZError(failed: "Acquire: unexpected reply")
        }
        return (fd, Int(outgoing))
    }

    public func release(_ transport: BlueZMediaTransport) async {
        _ = try? await objectManager.connection.call(destination: BlueZ.busName, path: transport.path, interface: BlueZ.mediaTransport, member: "Release")
    }
}

/// What one discovery has reported, shared by the reactor thread (devices as
/// signals arrive) and the discovery task (adapter changes).
final class DiscoveryReporter: Sendable {
    private struct State {
        var adapter: DBusObjectPath?
        /// Reported devices: path → endpoint id.
        var reported: [DBusObjectPath: String] = [:]
    }

    private let transport: BlueZTransport
    private let continuation: DiscoveryEvents.Continuation
    private let state = Mutex(State())

    init(transport: BlueZTransport, continuation: DiscoveryEvents.Continuation) {
        self.transport = transport
        self.continuation = continuation
    }

    func setAdapter(_ adapter: DBusObjectPath?) {
        state.withLock { $0.adapter = adapter }
    }

    /// Reports a device below the adapter that passes our filter (appeared or
    /// updated), or its loss when it no longer does.
    func consider(_ path: DBusObjectPath, _ properties: BlueZProperties) {
        state.withLock { state in
            guard let adapter = state.adapter, path.isDescendant(of: adapter),
                let endpoint = BlueZTransport.endpoint(path: path, properties: properties)
            else { return }
            if transport.matches(endpoint) {
                continuation.yield(state.reported.updateValue(endpoint.id, forKey: path) == nil ? .appeared(endpoint) : .updated(endpoint))
            } else if state.reported.removeValue(forKey: path) != nil {
                continuation.yield(.lost(endpointID: endpoint.id))
            }
        }
    }

    func lose(_ path: DBusObjectPath) {
        state.withLock { state in
            if let id = state.reported.removeValue(forKey: path) { continuation.yield(.lost(endpointID: id)) }
        }
    }

    func loseAll() {
        state.withLock { state in
            for id in state.reported.values.sorted() { continuation.yield(.lost(endpointID: id)) }
            state.reported.removeAll()
        }
    }
}
