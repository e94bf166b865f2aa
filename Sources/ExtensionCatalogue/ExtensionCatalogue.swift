import AdapterInventory
#if Bluetooth
import BLESpeakerExtension
import BlueZTransport
#endif
public import BoxConfiguration
public import Coordination
#if Cast
import CastExtension
#endif
public import DBus
public import LANTransport
public import Logging
public import MediaClock
import MediaDevice
import RoutingModel
#if AirPlay
import RAOPExtension
#endif
public import RouteSystem
import UPnPRendererExtension
import LiveStreaming
import HTTPServing
#if WiFi
import WiFiDisplayExtension
import WiFiTransport
#endif

/// Which extensions exist, how each is configured from the box's configuration and its
/// adapters, and how each is loaded into a routing system: the one place the daemon, the
/// CLI and the tests take them from.
public struct ExtensionCatalogue: Sendable {
    public var configuration: DaemonConfiguration
    /// The adapters udev and sysfs report (the LAN interfaces, the Wi-Fi interfaces, the primary Bluetooth controller).
    public var adapterRecords: @Sendable () -> [AdapterRecord]
    /// Whether the LAN uses only the interfaces the adapters mark as usable (else every multicast interface).
    public var followsAdapters: Bool
    public var lan: LANTransport.Configuration
    public var bluezBus: DBusConnection.Bus
    public var clock: any HostClock
    public var logger: Logger
    /// The daemon loads a protocol that cannot open yet, so its discovery failure is published
    /// (and BlueZ may start later); the CLI leaves it out with one notice line.
    public var loadsUnavailable: Bool
    /// How far ahead of playing AirPlay receivers are sent audio (0.25–10 s; iTunes' 2 s by
    /// default): less starts sooner, more rides out a worse network.
    public var airPlayLatency: Duration = .seconds(2)
    /// Where Cast receivers' certificates are pinned on first use (the daemon's state
    /// directory, the CLI's `~/.local/state/mediaroute`); nil keeps them in memory.
    public var castCertificatesPath: String?
    /// Where the host each AirPlay receiver was first used at is pinned (beside the Cast
    /// certificates); nil keeps them in memory.
    public var airPlayHostsPath: String?
    /// Where the keys of AirPlay 2 receivers paired with a PIN are kept, a file each (0600);
    /// nil keeps them in memory.
    public var airPlayKeysDirectory: String?
    /// The PTP master AirPlay 2 streams are timed by, on UDP 319/320 (binding them needs root or
    /// `CAP_NET_BIND_SERVICE`); its sockets open when the first AirPlay 2 stream starts and close
    /// after the last. Tests give it other ports.
    public var ptpMaster = PTPMaster.Configuration()

    /// Pins in `directory` (the daemon's state directory, the CLI's own): Cast certificates
    /// and AirPlay hosts, each in a file of its own.
    public mutating func pinIdentities(in directory: String?) {
        castCertificatesPath = directory.map { $0 + "/cast-certificates.json" }
        airPlayHostsPath = directory.map { $0 + "/airplay-hosts.json" }
        airPlayKeysDirectory = directory.map { $0 + "/airplay-keys" }
    }

    public init(
        configuration: DaemonConfiguration = DaemonConfiguration(), adapterRecords: @escaping @Sendable () -> [AdapterRecord] = { SysfsAdapterReader().records() },
        followsAdapters: Bool = false, lan: LANTransport.Configuration = .init(), bluezBus: DBusConnection.Bus = .system,
        clock: any HostClock = SystemHostClock(), loadsUnavailable: Bool = false, logger: Logger
    ) {
        self.configuration = configuration
        self.adapterRecords = adapterRecords
        self.followsAdapters = followsAdapters
        self.lan = lan
        self.bluezBus = bluezBus
        self.clock = clock
        self.loadsUnavailable = loadsUnavailable
        self.logger = logger
    }

    /// An extension's live-stream settings with the box's `[audio] live-…` keys applied.
    static func liveSettings(_ defaults: LiveStreamSettings, from configuration: DaemonConfiguration) -> LiveStreamSettings {
        var settings = defaults
        func framing(_ name: String) -> HTTPLiveFraming? {
            switch name {
            case "close": .closeDelimited
            case "chunked": .chunked
            // A length no stream reaches (~12 days of CD audio), below what 32-bit renderers overflow on.
            case "length": .contentLength(0x7FFF_FFFF_FFFF)
            default: nil
            }
        }
        if let name = configuration.liveFraming, let value = framing(name) { settings.framing = value }
        for (device, name) in configuration.liveFramings { settings.framings[device] = framing(name) }
        for (device, name) in configuration.liveFormats { settings.forcedEncodings[device] = LiveAudioEncoding(rawValue: name) }
        for (device, milliseconds) in configuration.liveLatencies { settings.latencies[device] = .microseconds(Int64(milliseconds * 1000)) }
        for (device, milliseconds) in configuration.livePrimes { settings.primes[device] = .microseconds(Int64(milliseconds * 1000)) }
        return settings
    }

    /// What loading opened, for the caller to follow and close.
    public struct Loaded: Sendable {
        /// The LAN transport, for following interface changes.
        public var lanTransport: LANTransport?
        /// Closes the connections loading opened (BlueZ's bus).
        public var close: @Sendable () async -> Void = {}
    }

    /// Loads the extension of each of `entries` into `system`; one that cannot open here is
    /// one `notice` (and, unless ``loadsUnavailable``, left out), never an error.
    /// - Throws: what `RouteSystem.load` throws (a protocol loaded twice).
    public func load(
        _ entries: Set<CatalogueEntry>, into system: RouteSystem, notice: @Sendable (CatalogueEntry, String) -> Void = { _, _ in }
    ) async throws -> Loaded {
        var loaded = Loaded()
        let adapters = resolvedAdapters()
        let settings = adapters.map(\.settings)
        let logger = self.logger
        #if AirPlay
        let airPlayLatency = self.airPlayLatency
        let airPlayHostsPath = self.airPlayHostsPath
        let airPlayKeysDirectory = self.airPlayKeysDirectory
        let airPlayTiming = PTPAirPlayTiming(service: PTPTimingService(clock: clock, configuration: ptpMaster))
        let airPlayProtocols = configuration.airPlayProtocols.compactMapValues(AirPlayProtocolChoice.init(rawValue:))
        #endif
        let clock = self.clock
        #if Cast
        var castConfiguration = CastExtension.Configuration(
            certificatesPath: castCertificatesPath, applicationNamespaces: configuration.castApplicationNamespaces)
        castConfiguration.live = Self.liveSettings(CastExtension.defaultLiveSettings, from: configuration)
        if let encoders = configuration.videoEncoders { castConfiguration.video.hardwareEncoders = encoders }
        #endif
        var upnpConfiguration = UPnPRendererExtension.Configuration()
        upnpConfiguration.live = Self.liveSettings(UPnPRendererExtension.defaultLiveSettings, from: configuration)
        if let encoders = configuration.videoEncoders { upnpConfiguration.video.hardwareEncoders = encoders }
        // The order of the catalogue is the order of loading, so the merged list is the same everywhere.
        for entry in CatalogueEntry.allCases where entries.contains(entry) {
            switch entry {
            case .lan:
                var lan = self.lan
                if followsAdapters && lan.interfaces == nil {
                    lan.interfaces = settings.filter { ($0.transport == .lan || $0.transport == .wifi) && $0.enabled }.map(\.name)
                }
                let transport = LANTransport(configuration: lan, clock: clock, logger: logger)
                try await system.load { [upnpConfiguration] manager in
                    UPnPRendererExtension(transport: transport, routingManager: manager, configuration: upnpConfiguration, clock: clock, logger: logger)
                }
                // AirPlay and Cast share one mDNS browse (each extension keeps its own types).
                var serviceTypes: [String] = []
                #if AirPlay
                serviceTypes += [RAOPExtension.serviceType, RAOPExtension.airPlayServiceType]
                #endif
                #if Cast
                serviceTypes.append(CastExtension.serviceType)
                #endif
                let browse = DNSSDServiceTransport(lan: transport, serviceTypes: serviceTypes)
                #if AirPlay
                try await system.load { manager in
                    RAOPExtension(
                        transport: browse, routingManager: manager, latency: airPlayLatency, hostPinsPath: airPlayHostsPath, timing: airPlayTiming,
                        pairingKeysDirectory: airPlayKeysDirectory, protocols: airPlayProtocols, clock: clock, logger: logger) }
                #endif
                #if Cast
                let cast = browse.sharingDiscovery(tls: true)
                try await system.load { [castConfiguration] manager in
                    CastExtension(transport: cast, routingManager: manager, configuration: castConfiguration, clock: clock, logger: logger)
                }
                #endif
                _ = browse
                loaded.lanTransport = transport
            #if Bluetooth
            case .bluez:
                // The box's named adapter, else a primary one, else any other enabled one: pinning the
                // one seen at start by name would wait forever for `hci0` after the dongle came back as `hci1`.
                let bluetooth = settings.filter { $0.transport == .bluetooth }
                switch await openBlueZ(
                    adapterName: configuration.bluetooth.preferredAdapter,
                    ignoring: Set(bluetooth.filter { !$0.enabled }.map(\.name)),
                    preferring: Set(bluetooth.filter { $0.enabled && $0.role == .primary }.map(\.name)))
                {
                case .success(let (transport, connection)):
                    try await system.load { manager in BLESpeakerExtension(transport: transport, routingManager: manager, clock: clock, logger: logger) }
                    loaded.close = { connection.close() }
                case .failure(let reason):
                    notice(.bluez, reason.message)
                }
            #endif
            #if WiFi
            case .wifi:
                let indexes = adapters.compactMap { settings, record -> UInt32? in
                    guard settings.transport == .wifi, settings.enabled, settings.scanMode != .off, let index = record.ifindex else { return nil }
                    return UInt32(index)
                }
                let wifi = WiFiTransport(
                    configuration: .init(
                        interfaceIndexes: indexes, p2p: configuration.wifi.scanMode == .p2p, setupSSIDPatterns: configuration.wifiSetupSSIDs),
                    clock: clock, logger: logger)
                if !loadsUnavailable {
                    if let reason = await wifi.unavailableReason {
                        notice(.wifi, "unavailable (\(reason))")
                        continue
                    }
                    if indexes.isEmpty {
                        notice(.wifi, "no Wi-Fi interface to scan")
                        continue
                    }
                }
                try await system.load { manager in WiFiDisplayExtension(transport: wifi, routingManager: manager, logger: logger) }
            #endif
            }
        }
        return loaded
    }

    /// The usable adapters' settings under the configuration, with the records they came from.
    private func resolvedAdapters() -> [(settings: AdapterSettings, record: AdapterRecord)] {
        adapterRecords().compactMap { record in
            guard case .success(let settings) = AdapterSettings.resolve(record, configuration: configuration) else { return nil }
            return (settings, record)
        }
    }

    #if Bluetooth
    /// BlueZ's object manager on the bus. The CLI wants `org.bluez` running now; the daemon
    /// follows it from whenever it starts.
    private func openBlueZ(adapterName: String?, ignoring ignored: Set<String>, preferring preferred: Set<String>) async -> Result<(BlueZTransport, DBusConnection), MediaDeviceError> {
        let connection: DBusConnection
        do {
            connection = try await DBusConnection.connect(to: bluezBus, logger: logger)
        } catch {
            return .failure(MediaDeviceError(.discoveryFailed, "no system bus to find BlueZ on (\(error))"))
        }
        if !loadsUnavailable, (try? await connection.nameOwner(of: "org.bluez")) ?? nil == nil {
            connection.close()
            return .failure(MediaDeviceError(.discoveryFailed, "BlueZ (org.bluez) is not running"))
        }
        let manager = BlueZObjectManager(connection: connection, logger: logger)
        do {
            try await manager.start()
        } catch {
            connection.close()
            return .failure(MediaDeviceError(.discoveryFailed, "cannot read BlueZ's objects (\(error))"))
        }
        let transport = BlueZTransport(
            objectManager: manager, configuration: .init(
                adapterName: adapterName, ignoredAdapterNames: ignored, preferredAdapterNames: preferred, a2dpSources: configuration.bluetoothA2DPSource
                    ? A2DPSourceCodec.offered(preference: configuration.bluetoothCodecs, logger: logger) : [],
                a2dpSourceStepsAside: configuration.bluetoothA2DPSourceStepsAside),
            clock: clock, logger: logger)
        return .success((transport, connection))
    }
    #endif
}
