import AdapterInventory
public import BoxConfiguration
import HTTPServing
public import Coordination
import BuildStamp
public import DBus
import ExtensionCatalogue
import IPNetwork
public import MediaRouteBusAPI
public import Logging
#if SimulatedDevices
public import LoopbackTransport
#endif
public import MPRIS
import MediaClock
import NowPlaying
public import NowPlayingPush
import NowPlayingRouting
import RouteSystem
public import LANTransport
import UPnPRendererExtension
public import ServiceLifecycle
import WiFiTransport
import SystemRouting

/// `mediarouted` as a swift-service-lifecycle service: connect, load extensions,
/// publish, own the name; on SIGTERM/SIGINT deactivate routes and release the name.
public struct DaemonService: Service {
    /// Now Playing: the MPRIS player and the push endpoint.
    public struct NowPlayingOptions: Sendable {
        /// Publish the primary session as an MPRIS player on the daemon's bus.
        public var mpris: Bool
        public var mprisBusName: String
        /// Where the push endpoint listens; nil: no endpoint.
        public var push: PushEndpoint.Configuration?

        public init(mpris: Bool = true, mprisBusName: String = MPRISNames.defaultBusName, push: PushEndpoint.Configuration? = PushEndpoint.Configuration()) {
            self.mpris = mpris
            self.mprisBusName = mprisBusName
            self.push = push
        }
    }

    public let bus: DBusConnection.Bus
    public let busName: String
    #if SimulatedDevices
    /// Simulated devices (the loopback extension); nil, as on a box: only real devices.
    /// A build without the `SimulatedDevices` trait (the installed one) has no such thing.
    public var scenario: LoopbackScenario?
    #endif
    public let nowPlaying: NowPlayingOptions
    /// Transport defaults for adapters (udev properties override them per device).
    public let configuration: DaemonConfiguration
    /// Follow adapters through udev/sysfs (off: the scenario's devices are always reachable).
    public let followsAdapters: Bool
    /// The bus BlueZ is on (nil: no BLE speakers).
    public let bluezBus: DBusConnection.Bus?
    /// UPnP/DLNA renderers on the LAN (nil: none).
    public let lan: LANTransport.Configuration?
    /// Where the daemon keeps what it learns (route suggestions); nil: memory only.
    public let stateDirectory: String?
    /// How far ahead of playing AirPlay receivers are sent audio (``ExtensionCatalogue/airPlayLatency``).
    public var airPlayLatency: Duration = .seconds(2)
    /// The household's key: with it (and the LAN on) the box publishes itself as
    /// `_mediaroute._udp` and finds the household's other boxes (``BoxPresence``).
    public var householdKey: HouseholdKey?
    /// This box's name among them (default: the host name).
    public var boxName: String?
    /// The directories local files named on the bus may be served from (nil: `[http] serve-from`, else the defaults).
    public var serveFrom: [String]?
    public let logger: Logger

    public init(
        bus: DBusConnection.Bus, busName: String = DaemonNames.busName,
        nowPlaying: NowPlayingOptions = NowPlayingOptions(), configuration: DaemonConfiguration = DaemonConfiguration(),
        followsAdapters: Bool = true, bluezBus: DBusConnection.Bus? = nil, lan: LANTransport.Configuration? = nil,
        stateDirectory: String? = nil, logger: Logger
    ) {
        self.stateDirectory = stateDirectory
        self.bluezBus = bluezBus
        self.lan = lan
        self.bus = bus
        self.busName = busName
        self.nowPlaying = nowPlaying
        self.configuration = configuration
        self.followsAdapters = followsAdapters
        self.logger = logger
    }

    public func run() async throws {
        // The first line says which build runs: the version and the commit it was built from.
        logger.info("mediarouted \(MediaRouteBuild.description) starting")
        let connection = try await DBusConnection.connect(to: bus, logger: logger)
        let readers = PrivateReaders(connection: connection)
        connection.setPrivateReaders { await readers.mayRead($0) }
        var routing = RouteSystem.Configuration()
        routing.preferredProtocols = configuration.preferredProtocols
        routing.groupOffsets = configuration.groupOffsetDurations
        let system = RouteSystem(configuration: routing, logger: logger)
        let logger = self.logger
        // What else follows the adapters as they come and go.
        var adapterFollowers: [AdapterFollower] = []
        #if SimulatedDevices
        if let follower = try await loadSimulatedDevices(into: system) { adapterFollowers.append(follower) }
        #endif
        // The catalogue's protocols the configuration turns on; Wi-Fi only on adapters udev
        // marks as usable. A protocol that cannot open yet is still loaded: its discovery
        // failure is published, and BlueZ is followed from whenever it starts.
        var catalogue = ExtensionCatalogue(
            configuration: configuration, followsAdapters: followsAdapters, lan: lan ?? .init(), bluezBus: bluezBus ?? .system,
            loadsUnavailable: true, logger: logger)
        catalogue.airPlayLatency = airPlayLatency
        catalogue.pinIdentities(in: stateDirectory)
        var entries = Set(CatalogueEntry.allCases.filter { $0.isEnabled(in: configuration) })
        #if WiFi
        if !followsAdapters { entries.remove(.wifi) }
        #endif
        #if Bluetooth
        if bluezBus == nil { entries.remove(.bluez) }
        #endif
        if lan == nil { entries.remove(.lan) }
        let loaded = try await catalogue.load(entries, into: system) { entry, reason in
            logger.error("\(entry.noticeName) devices unavailable: \(reason)")
        }
        // Each subsystem is started here, in order (the bus name last: owning it means ready),
        // and becomes a service of one group that stops them in the reverse order.
        var subsystems: [ServiceGroupConfiguration.ServiceConfiguration] = []
        func add(_ name: String, stop: @escaping @Sendable () async -> Void) {
            subsystems.append(.init(service: Subsystem(name: name, stop: stop)))
        }
        add("bus connection") { connection.close() }
        add("protocols") { await loaded.close() }
        if let lanTransport = loaded.lanTransport {
            // rtnetlink changes refresh the LAN's interfaces.
            do {
                let monitor = try NetworkChangeMonitor(logger: logger)
                let restarter = DiscoveryRestarter(changes: monitor.changes, transport: lanTransport, logger: logger)
                add("network changes") {
                    restarter.stop()
                    monitor.stop()
                }
            } catch {
                logger.notice("LAN interfaces are not followed (no rtnetlink: \(error))")
            }
        }
        let suggestions = RouteSuggestionStore(path: stateDirectory.map { $0 + "/route-suggestions.json" }, logger: logger)
        let daemon = RoutingDaemon(system: system, connection: connection, suggestions: suggestions, logger: logger)
        await daemon.setServedDirectories(ServedDirectories(serveFrom ?? configuration.serveFrom ?? ServedDirectories.defaults))
        if let householdKey, let lanTransport = loaded.lanTransport {
            do {
                let name = boxName ?? BoxPresence.hostName()
                let box = try BoxPresence(
                    name: name, id: BoxPresence.localID(name: name), key: householdKey, lan: lanTransport,
                    interfaces: lan?.interfaces, logger: logger, changed: { [weak daemon] in await daemon?.boxesChanged() })
                try await box.start()
                await daemon.setPresence(box)
                // The other boxes hear this one go (mDNS goodbye) before the LAN closes.
                add("box presence") { await box.stop() }
            } catch {
                logger.error("this box is not published to the household (\(error))")
            }
        } else if loaded.lanTransport != nil {
            logger.notice("no household key: this box is not published as _mediaroute._udp (--household-key FILE)")
        }
        #if PipeWire
        let address = switch bus {
        case .system: "system"
        case .session: "session"
        case .address(let address): address
        }
        await daemon.publishPipeWireVideoNodes(configuration.pipeWireVideo)
        switch configuration.pipeWire {
        case .on:
            await daemon.publishPipeWireSinks(bus: address, runtimeDirectory: configuration.pipeWireRuntimeDirectory)
        case .automatic:
            let directory = configuration.pipeWireRuntimeDirectory ?? PipeWireSinkLauncher.systemRuntimeDirectory
            if PipeWireSinkLauncher.socketExists(in: directory) {
                logger.info("PipeWire sink nodes in the system-wide PipeWire", metadata: ["runtime-dir": "\(directory)"])
                await daemon.publishPipeWireSinks(bus: address, runtimeDirectory: directory)
            } else {
                logger.notice(
                    "no system-wide PipeWire (\(directory)/pipewire-0): routes' sink nodes come from mediaroute-pipewire.service in the sessions that run PipeWire")
                await daemon.leavePipeWireSinksToSessions()
            }
        case .off:
            break
        }
        #endif
        // Now Playing comes up before the bus name is taken: owning the name means ready.
        let nowPlaying = try await startNowPlaying(system: system, connection: connection)
        add("now playing") { await nowPlaying.stop() }
        if let adapters = await followAdapters(daemon: daemon, followers: adapterFollowers) {
            add("adapters") { await adapters.stop() }
        }
        try await daemon.start(busName: busName)
        let busName = self.busName
        add("bus objects") { await daemon.stop(busName: busName) }
        // The bus going away ends the daemon as a signal does: the group shuts down in order.
        let disconnected = try await connection.signals(matching: DBusMatchRule(interface: "org.mediaroute.NeverSent"))
        subsystems.append(.init(service: BusWatch(disconnected: disconnected), successTerminationBehavior: .gracefullyShutdownGroup))
        // Ends on the graceful shutdown of the group mediarouted runs this service in (SIGTERM,
        // SIGINT), or when the bus goes away.
        let group = ServiceGroup(configuration: .init(services: subsystems, logger: logger))
        try await group.run()
        logger.info("mediarouted stopped")
    }
}

/// The Now Playing parts of a running daemon, to stop together.
struct RunningNowPlaying: Sendable {
    let publisher: RoutedSessionPublisher
    let bridge: MPRISBridge?
    let endpoint: PushEndpoint?
    let server: Task<Void, Never>?

    func stop() async {
        await bridge?.stop()
        await publisher.stop()
        endpoint?.close()
        await server?.value
    }
}

extension DaemonService {
    /// Starts the center, the routed-session publisher, the push endpoint and the MPRIS player.
    func startNowPlaying(system: RouteSystem, connection: DBusConnection) async throws -> RunningNowPlaying {
        let center = NowPlayingCenter(logger: logger)
        let publisher = RoutedSessionPublisher(system: system, center: center, logger: logger)
        try await publisher.start()
        try await center.register(PushedSessionExtension { command in
            connection.emitSignal(
                path: Push1.path, interface: Push1.interface, member: Push1.CommandRequested.member, PushObject.signal(command).arguments)
        })
        var endpoint: PushEndpoint?
        var server: Task<Void, Never>?
        if let configuration = nowPlaying.push {
            do {
                let bound = try await PushEndpoint.bind(configuration, center: center, logger: logger)
                endpoint = bound
                server = Task { await bound.run() }
            } catch {
                // The rest of the daemon is still useful without pushes.
                logger.error("push endpoint not started", metadata: ["address": "\(configuration.host):\(configuration.port)", "error": "\(error)"])
            }
        }
        let address = endpoint.map { "http://\(nowPlaying.push!.host):\($0.localPort)\(PushEndpoint.path)" }
        await connection.export(PushObject(center: center, endpoint: address).object, at: Push1.path)
        var bridge: MPRISBridge?
        if nowPlaying.mpris {
            let mpris = MPRISBridge(center: center, connection: connection, configuration: .init(busName: nowPlaying.mprisBusName), logger: logger)
            do {
                try await mpris.start()
                bridge = mpris
            } catch {
                logger.error("MPRIS player not published", metadata: ["name": "\(nowPlaying.mprisBusName)", "error": "\(error)"])
            }
        }
        return RunningNowPlaying(publisher: publisher, bridge: bridge, endpoint: endpoint, server: server)
    }
}

extension DaemonService {
    /// Told the adapters each time they change (the simulated devices, in a development build).
    typealias AdapterFollower = @Sendable ([AdapterSettings]) async -> Void

    /// Starts the adapter inventory: publishes the adapters and tells `followers`
    /// each time they change.
    func followAdapters(daemon: RoutingDaemon, followers: [AdapterFollower]) async -> AdapterInventory? {
        guard followsAdapters else { return nil }
        let inventory = AdapterInventory(configuration: configuration, logger: logger)
        let events = await inventory.events()
        await inventory.start()
        let logger = self.logger
        @Sendable func apply(_ adapters: [AdapterSettings]) async {
            await daemon.setAdapters(adapters)
            for follower in followers { await follower(adapters) }
        }
        await apply(await inventory.adapters)
        Task {
            for await event in events {
                if case .invalid(let problem) = event { logger.error("\(problem)") }
                await apply(await inventory.adapters)
            }
        }
        return inventory
    }
}

/// A subsystem the daemon started: it runs until the group's graceful shutdown, then stops.
struct Subsystem: Service {
    let name: String
    let stop: @Sendable () async -> Void

    func run() async throws {
        // Returns at the graceful shutdown (or throws at cancellation: stopped all the same).
        try? await gracefulShutdown()
        await stop()
    }
}

/// Returns when the bus connection goes away (its match never sees a signal, and ends with
/// the connection), or at the group's graceful shutdown.
struct BusWatch: Service {
    let disconnected: AsyncStream<DBusMessage>

    func run() async throws {
        await cancelWhenGracefulShutdown {
            for await _ in disconnected {}
        }
    }
}
