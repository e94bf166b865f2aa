#if canImport(Glibc)
import Glibc
#endif
import IPNetwork
public import Logging
public import MediaClock
import NIOCore
import NIOPosix
import Synchronization
public import Transport

/// The LAN transport: SSDP discovery of UPnP devices on every multicast
/// interface, and bounded HTTP to the devices it found.
///
/// Endpoints are keyed by UDN. Their attributes carry what SSDP said and what
/// the extension needs to reach the device: `location`, `server`, `target`,
/// `maxAge`, and `interfaceAddress`, our address on the interface that faces it
/// (for GENA callbacks and served media).
public final class LANTransport: Transport {
    public struct Configuration: Sendable {
        /// What to search for.
        public var searchTarget: String
        /// Announcements accepted: targets starting with one of these.
        public var acceptedTargetPrefixes: [String]
        /// Seconds devices may wait before answering.
        public var mx: Int
        /// Hosts (IPv4 literals) searched by unicast as well, for networks that drop multicast.
        public var manualHosts: [String]
        /// Interface names to use; nil: every up, multicast-capable one.
        public var interfaces: [String]?
        /// Listen for `NOTIFY` on port 1900.
        public var listensForNotifications: Bool
        /// First re-search after this long, then doubling up to ``maximumSearchInterval``.
        public var initialSearchInterval: Duration
        public var maximumSearchInterval: Duration
        /// The max-age assumed when an announcement has none.
        public var defaultMaxAge: Int
        /// How long a device that said `ssdp:byebye` is kept in case an `ssdp:alive`
        /// follows: GUPnP devices (rygel) send byebye then alive when they start.
        public var byebyeGrace: Duration
        /// DNS-SD service types browsed over mDNS next to SSDP (e.g. `_airplay._tcp`,
        /// `_raop._tcp`, `_googlecast._tcp`): reported as discovery-only endpoints.
        public var browsedServiceTypes: [String]
        /// The longest pause between mDNS queries (they start at 1 s and double).
        public var maximumBrowseInterval: Duration
        /// A cap on announced max-ages, for boxes that must notice a dead device
        /// sooner than its announcements promise (re-searches keep live ones); nil: no cap.
        public var maximumMaxAge: Int?
        /// How often ignored datagrams (malformed, pointing elsewhere, over the device
        /// table) are reported: one log line per period, with counts by reason.
        public var ignoredReportPeriod: Duration

        public init(
            searchTarget: String = "urn:schemas-upnp-org:device:MediaRenderer:1",
            acceptedTargetPrefixes: [String] = ["urn:schemas-upnp-org:device:MediaRenderer:"],
            mx: Int = 1, manualHosts: [String] = [], interfaces: [String]? = nil, listensForNotifications: Bool = true,
            initialSearchInterval: Duration = .seconds(1), maximumSearchInterval: Duration = .seconds(60), defaultMaxAge: Int = 1800,
            maximumMaxAge: Int? = nil, browsedServiceTypes: [String] = [], maximumBrowseInterval: Duration = .seconds(60),
            byebyeGrace: Duration = .milliseconds(1500), ignoredReportPeriod: Duration = .seconds(60)
        ) {
            self.ignoredReportPeriod = ignoredReportPeriod
            self.byebyeGrace = byebyeGrace
            self.maximumMaxAge = maximumMaxAge
            self.browsedServiceTypes = browsedServiceTypes
            self.maximumBrowseInterval = maximumBrowseInterval
            self.searchTarget = searchTarget
            self.acceptedTargetPrefixes = acceptedTargetPrefixes
            self.mx = max(1, min(mx, 5))
            self.manualHosts = manualHosts
            self.interfaces = interfaces
            self.listensForNotifications = listensForNotifications
            self.initialSearchInterval = initialSearchInterval
            self.maximumSearchInterval = maximumSearchInterval
            self.defaultMaxAge = defaultMaxAge
        }
    }

    public let name = "lan"
    public let configuration: Configuration
    /// HTTP to the devices (bounded reads).
    public let http: LANHTTPClient
    private let logger: Logger
    private let clock: any HostClock
    private let runs = Mutex<[UInt64: (ssdp: SSDPDiscoveryRun, mdns: MDNSBrowseRun?)]>([:])
    private let nextRun = Atomic<UInt64>(0)

    /// - Parameter clock: the time searches, max-age expiry and byebye grace run on.
    public init(configuration: Configuration = Configuration(), clock: any HostClock = SystemHostClock(), logger: Logger = Logger(label: "mediaroute.lan")) {
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        self.http = LANHTTPClient(logger: logger)
    }

    public func discover() -> DiscoveryEvents {
        let (stream, continuation) = DiscoveryEvents.makeStream()
        let id = nextRun.add(1, ordering: .relaxed).newValue
        let http = self.http
        let run = SSDPDiscoveryRun(
            configuration: configuration, continuation: continuation, clock: clock, logger: logger,
            stillAnswers: { url in await Self.stillAnswers(url, http: http) })
        let browser = configuration.browsedServiceTypes.isEmpty ? nil : MDNSBrowseRun(
            serviceTypes: configuration.browsedServiceTypes, interfaces: configuration.interfaces,
            maximumQueryInterval: configuration.maximumBrowseInterval, ignoredReportPeriod: configuration.ignoredReportPeriod,
            continuation: continuation, clock: clock, logger: logger)
        runs.withLock { $0[id] = (run, browser) }
        let task = Task {
            await run.start()
            await browser?.start()
        }
        continuation.onTermination = { [weak self] _ in
            task.cancel()
            self?.runs.withLock { _ = $0.removeValue(forKey: id) }
            Task {
                await browser?.stop()
                await run.stop()
            }
        }
        return stream
    }

    /// Whether a device's description URL still answers (any HTTP answer counts; refused,
    /// unreachable or silent for 2 s does not): what decides that a device announced from
    /// another address has really moved.
    static func stillAnswers(_ url: HTTPURL, http: LANHTTPClient) async -> Bool {
        do {
            _ = try await http.request("GET", host: url.host, port: url.port, path: url.path,
                                       limits: HTTPLimits(maximumBodyBytes: 16 * 1024, timeout: .seconds(2), maximumRedirects: 0))
            return true
        } catch {
            switch error.code {
            case .unreachable, .connectionRefused, .timedOut, .closed, .unavailable, .discoveryFailed: return false
            default: return true
            }
        }
    }

    /// Browses DNS-SD service types over mDNS alone (no SSDP).
    public func browse(serviceTypes: [String]) -> DiscoveryEvents {
        let (stream, continuation) = DiscoveryEvents.makeStream()
        let browser = MDNSBrowseRun(
            serviceTypes: serviceTypes, interfaces: configuration.interfaces, maximumQueryInterval: configuration.maximumBrowseInterval,
            ignoredReportPeriod: configuration.ignoredReportPeriod, continuation: continuation, clock: clock, logger: logger)
        let task = Task { await browser.start() }
        continuation.onTermination = { _ in
            task.cancel()
            Task { await browser.stop() }
        }
        return stream
    }

    /// The interface list changed: every running discovery opens sockets on new
    /// interfaces and searches there at once, and drops those that are gone
    /// (their devices are reported lost).
    public func refreshInterfaces() {
        for run in runs.withLock({ Array($0.values) }) {
            Task {
                await run.ssdp.refresh()
                await run.mdns?.refresh()
            }
        }
    }

    /// LAN devices are reached with HTTP requests (``fetch(_:for:limits:)``), not a connection.
    /// A TCP connection to the host and port the device announced, with UDP sockets that
    /// talk to that host only (``Connection/byteStream``, ``Connection/datagrams``). UPnP
    /// renderers are reached with HTTP requests instead (``fetch(_:_:for:headers:body:limits:)``).
    public func connect(to endpoint: Endpoint) async throws(TransportError) -> any Connection {
        try await connect(to: endpoint, tls: false)
    }

    /// The same, with TLS on the stream when `tls` (nothing verifies the device's certificate:
    /// the stream hands it up in ``ByteStream/peerCertificate`` to be pinned).
    public func connect(to endpoint: Endpoint, tls: Bool) async throws(TransportError) -> any Connection {
        guard case .ip(let host, let port, _) = endpoint.address, port > 0 else {
            throw TransportError(.unreachable, "\(endpoint.id) has no LAN address with a port")
        }
        return try await LANConnection.connect(to: endpoint, host: host, port: Int(port), tls: tls, timeout: .seconds(5), logger: logger)
    }

    /// Sends one request to `url`, which must be on the endpoint's host.
    /// - Throws: ``TransportError/Code/unreachable`` without any request when the URL
    ///   points to another host; otherwise the errors of ``LANHTTPClient``.
    public func fetch(
        _ method: String = "GET", _ url: String, for endpoint: Endpoint, headers: [(String, String)] = [], body: [UInt8] = [],
        limits: HTTPLimits = HTTPLimits()
    ) async throws(TransportError) -> HTTPResponse {
        guard case .ip(let host, _, _) = endpoint.address else { throw TransportError(.unreachable, "\(endpoint.id) is not a LAN endpoint") }
        guard let target = HTTPURL(url), target.host == host.lowercased() else {
            logger.warning("request to another host than the device's refused", metadata: ["device": "\(endpoint.id)", "url": "\(url.prefix(120))"])
            throw TransportError(.unreachable, "\(url.prefix(120)) is not on \(endpoint.id)'s host \(host)")
        }
        return try await http.request(method, host: target.host, port: target.port, path: target.path, headers: headers, body: body, limits: limits)
    }
}

/// One discovery: sockets per interface, the NOTIFY listener, the device table with expiry.
actor SSDPDiscoveryRun {
    static let maximumDevices = 512
    /// Datagrams acted on per second, from one source and from all: a flood is dropped and
    /// counted before any work (honest devices send a few a minute, a burst at start-up).
    static let datagramBudget = (perSource: SourceRateBudget.Rate(perSecond: 50, burst: 200),
                                 overall: SourceRateBudget.Rate(perSecond: 1000, burst: 2000))
    /// Checks of a device's old address at once (each a TCP connection for up to 2 s).
    static let maximumChecks = 4

    private struct Known {
        var endpoint: Endpoint
        /// On ``clock``.
        var expires: Duration
    }

    private let configuration: LANTransport.Configuration
    private let continuation: DiscoveryEvents.Continuation
    private let logger: Logger
    private let clock: any HostClock
    private let sockets: MulticastSockets
    private var searchSockets: [String: (interface: MulticastInterface, channel: any Channel)] = [:]
    private var unicastSocket: (any Channel)?
    private var listener: (any Channel)?
    private var joined: Set<String> = []
    private var known: [String: Known] = [:]
    /// Devices that said byebye, and when they are reported lost unless they announce again.
    private var leaving: [String: Duration] = [:]
    private var nextSearch: Duration
    private var searchInterval: Duration
    private var timer: Task<Void, Never>?
    /// When ``timer`` wakes.
    private var plannedWake: Duration?
    private var reader: Task<Void, Never>?
    private var stopped = false
    private let ignored: IgnoredDatagrams
    private var budget = SourceRateBudget(perSource: datagramBudget.perSource, overall: datagramBudget.overall)
    /// Asks a device's description URL whether it still answers.
    private let stillAnswers: @Sendable (HTTPURL) async -> Bool
    /// Devices announced from another address than the one they were learned at, while the old
    /// address is checked: the newest such announcement, and when the check may run again.
    private var moves: [String: (endpoint: Endpoint, checking: Bool, nextCheck: Duration)] = [:]
    private var checksRunning = 0

    init(
        configuration: LANTransport.Configuration, continuation: DiscoveryEvents.Continuation, clock: any HostClock, logger: Logger,
        stillAnswers: @escaping @Sendable (HTTPURL) async -> Bool = { _ in true }
    ) {
        self.stillAnswers = stillAnswers
        self.configuration = configuration
        self.clock = clock
        self.continuation = continuation
        self.logger = logger
        let sockets = MulticastSockets(maximumDatagram: SSDPMessage.maximumSize)
        self.sockets = sockets
        self.ignored = IgnoredDatagrams(protocolName: "SSDP", sockets: sockets, period: configuration.ignoredReportPeriod, clock: clock, logger: logger)
        self.searchInterval = configuration.initialSearchInterval
        self.nextSearch = clock.now() + configuration.initialSearchInterval
    }

    func start() async {
        let stream = sockets.datagrams
        reader = Task { [weak self] in
            for await datagram in stream {
                guard let self else { return }
                await self.handle(datagram)
            }
        }
        if configuration.listensForNotifications { await openListener() }
        if !configuration.manualHosts.isEmpty {
            unicastSocket = try? await bindDatagram(host: "0.0.0.0", port: 0, interface: nil)
        }
        await refresh()
        planTimer()
    }

    func stop() async {
        stopped = true
        timer?.cancel()
        reader?.cancel()
        sockets.finish()
        for (_, socket) in searchSockets { try? await socket.channel.close() }
        searchSockets = [:]
        try? await unicastSocket?.close()
        try? await listener?.close()
        ignored.finish()
        continuation.finish()
    }


    /// Opens sockets on new interfaces (searching there at once) and drops gone ones.
    func refresh() async {
        guard !stopped else { return }
        let current = MulticastInterface.current().filter { configuration.interfaces?.contains($0.name) ?? true }
        let names = Set(current.map(\.name))
        for (name, socket) in searchSockets where !names.contains(name) || current.first(where: { $0.name == name }) != socket.interface {
            try? await socket.channel.close()
            searchSockets[name] = nil
            joined.remove(name)
            for (udn, entry) in known where entry.endpoint.interfaceName == name {
                known[udn] = nil
                leaving[udn] = nil
                continuation.yield(.lost(endpointID: udn))
            }
            logger.info("SSDP stopped on \(name)")
        }
        for interface in current where searchSockets[interface.name] == nil {
            do {
                let channel = try await bindDatagram(host: interface.address, port: 0, interface: interface)
                searchSockets[interface.name] = (interface, channel)
                if let listener, !joined.contains(interface.name) { await join(listener, interface) }
                send(search(), on: channel, to: "239.255.255.250")
                logger.debug("SSDP searching", metadata: ["interface": "\(interface.name)"])
            } catch {
                logger.warning("SSDP cannot use \(interface.name): \(error)")
            }
        }
        searchManualHosts()
    }

    private func search() -> [UInt8] {
        Array("""
            M-SEARCH * HTTP/1.1\r
            HOST: 239.255.255.250:1900\r
            MAN: "ssdp:discover"\r
            MX: \(configuration.mx)\r
            ST: \(configuration.searchTarget)\r
            USER-AGENT: Linux UPnP/1.1 MediaRoute/0.1\r
            \r

            """.utf8)
    }

    private func searchManualHosts() {
        guard let unicastSocket else { return }
        // Real renderers answer a unicast search only when it carries the multicast HOST header.
        for host in configuration.manualHosts { send(search(), on: unicastSocket, to: host) }
    }

    private func searchEverywhere() {
        for (_, socket) in searchSockets { send(search(), on: socket.channel, to: "239.255.255.250") }
        searchManualHosts()
    }

    private func send(_ bytes: [UInt8], on channel: any Channel, to host: String) {
        sockets.send(bytes, on: channel, to: host, port: 1900)
    }

    private func bindDatagram(host: String, port: Int, interface: MulticastInterface?) async throws -> any Channel {
        try await sockets.bind(host: host, port: port, sendingOn: interface, ttl: 2)
    }

    private func openListener() async {
        do {
            listener = try await bindDatagram(host: "0.0.0.0", port: 1900, interface: nil)
        } catch {
            logger.notice("not listening for SSDP NOTIFY (port 1900: \(error)); searching only")
        }
    }

    private func join(_ listener: any Channel, _ interface: MulticastInterface) async {
        do {
            try await sockets.join(listener, group: "239.255.255.250", port: 1900, on: interface)
            joined.insert(interface.name)
        } catch {
            logger.notice("cannot join the SSDP group on \(interface.name): \(error)")
        }
    }

    private func handle(_ datagram: Datagram) {
        guard !stopped else { return }
        ignored.countDropped()
        let message: SSDPMessage
        do {
            message = try SSDPMessage.parse(datagram.bytes)
        } catch {
            ignored.count("malformed")
            return
        }
        guard message.kind != .search, let udn = message.udn else { return }
        guard budget.spend(1, by: datagram.host, now: clock.now()) else {
            ignored.count("over the source's datagram budget")
            return
        }
        if message.kind == .notify && message.notificationSubtype?.lowercased() == "ssdp:byebye" {
            // Only the address a device was learned at may say it leaves (anyone can send a byebye).
            if let entry = known[udn], entry.endpoint.host != datagram.host {
                ignored.count("byebye from another host than the device's")
                return
            }
            if known[udn] != nil && leaving[udn] == nil {
                leaving[udn] = clock.now() + configuration.byebyeGrace
                logger.info("SSDP byebye", metadata: ["udn": "\(udn)"])
                planTimer()
            }
            return
        }
        if let entry = known[udn], entry.endpoint.host != datagram.host {
            considerMove(udn, from: datagram, message: message)
            return
        }
        if message.kind == .searchResponse || message.notificationSubtype?.lowercased() != "ssdp:byebye" {
            leaving[udn] = nil
        }
        guard let (endpoint, maxAge) = endpoint(udn, from: datagram, message: message) else { return }
        let expires = clock.now() + .seconds(maxAge)
        if let previous = known[udn] {
            known[udn] = Known(endpoint: endpoint, expires: expires)
            if previous.endpoint.address != endpoint.address || previous.endpoint.facts.descriptionLocation != endpoint.facts.descriptionLocation {
                continuation.yield(.updated(endpoint))
            }
        } else {
            // A LAN can announce anything: the table is bounded (a flood of made-up devices is dropped).
            guard known.count < Self.maximumDevices else {
                ignored.count("device table full")
                return
            }
            known[udn] = Known(endpoint: endpoint, expires: expires)
            continuation.yield(.appeared(endpoint))
            logger.info("UPnP device found", metadata: ["udn": "\(udn)", "location": "\(endpoint.attributes["location"] ?? "")", "interface": "\(endpoint.interfaceName ?? "")"])
        }
        // The timer sleeps until the wake planned last; an earlier expiry needs it sooner.
        if plannedWake.map({ nextWake < $0 }) ?? true { planTimer() }
    }

    /// The endpoint an announcement describes, with its max-age; nil (counted) when it is not one
    /// to act on. An announcement for another target of a known device (its root device, a
    /// service) only keeps that device alive.
    private func endpoint(_ udn: String, from datagram: Datagram, message: SSDPMessage) -> (Endpoint, Int)? {
        let maxAge = min(message.maxAge ?? configuration.defaultMaxAge, configuration.maximumMaxAge ?? Int.max)
        let accepted = message.target.map { target in configuration.acceptedTargetPrefixes.contains { target.hasPrefix($0) } } ?? false
        guard accepted else {
            // Other announcements of a known device (root device, services) keep it alive.
            if var entry = known[udn] {
                entry.expires = max(entry.expires, clock.now() + .seconds(maxAge))
                known[udn] = entry
            }
            return nil
        }
        guard let location = message["LOCATION"], let target = HTTPURL(location) else {
            ignored.count("no usable LOCATION")
            return nil
        }
        guard target.host == datagram.host else {
            // Following it would make us a reflector: a device may only point at itself.
            ignored.count("LOCATION on another host")
            return nil
        }
        let interface = datagram.interfaceName.flatMap { name in searchSockets[name]?.interface }
            ?? searchSockets.values.map(\.interface).first { $0.contains(datagram.host) }
            ?? (configuration.manualHosts.contains(datagram.host) ? MulticastInterface.current().first { $0.contains(datagram.host) } : nil)
        guard let interface else {
            ignored.count("from no interface in use")
            return nil
        }
        var attributes = ["target": message.target ?? "", "maxAge": String(maxAge)]
        if let server = message["SERVER"] { attributes["server"] = String(server.prefix(200)) }
        let endpoint = Endpoint(
            id: udn, transport: "lan", address: .ip(host: datagram.host, port: target.port, interface: interface.name), attributes: attributes,
            services: [message.target ?? ""], facts: EndpointFacts(interfaceAddress: interface.address, descriptionLocation: location))
        return (endpoint, maxAge)
    }

    /// A known device announced from another address: it moves only once its old address stops
    /// answering (a device that changed address does not answer there; one being impersonated
    /// does). One check per device at a time, a few at once, and at most one per device every
    /// 30 s: announcements cannot make checks without bound.
    private func considerMove(_ udn: String, from datagram: Datagram, message: SSDPMessage) {
        guard let (candidate, _) = endpoint(udn, from: datagram, message: message), let old = known[udn] else { return }
        let now = clock.now()
        var move = moves[udn] ?? (candidate, false, now)
        move.endpoint = candidate
        moves[udn] = move
        guard !move.checking, move.nextCheck <= now, checksRunning < Self.maximumChecks,
            let location = old.endpoint.facts.descriptionLocation.flatMap(HTTPURL.init)
        else {
            ignored.count("device announced from another host")
            return
        }
        moves[udn]?.checking = true
        checksRunning += 1
        let check = stillAnswers
        Task { [weak self] in
            let answers = await check(location)
            await self?.checked(udn, oldHost: old.endpoint.host, stillAnswers: answers)
        }
    }

    private func checked(_ udn: String, oldHost: String?, stillAnswers: Bool) {
        checksRunning -= 1
        guard let move = moves[udn] else { return }
        guard !stopped, let old = known[udn], old.endpoint.host == oldHost else {
            moves[udn] = nil
            return
        }
        if stillAnswers {
            moves[udn] = (move.endpoint, false, clock.now() + .seconds(30))
            logger.warning("a device was announced from another host while it still answers at its own: not moved",
                           metadata: ["udn": "\(udn)", "at": "\(oldHost ?? "")", "claimed from": "\(move.endpoint.host ?? "")"])
            return
        }
        moves[udn] = nil
        let maxAge = Int(move.endpoint.attributes["maxAge"] ?? "") ?? configuration.defaultMaxAge
        known[udn] = Known(endpoint: move.endpoint, expires: clock.now() + .seconds(maxAge))
        leaving[udn] = nil
        continuation.yield(.updated(move.endpoint))
        logger.info("UPnP device moved", metadata: ["udn": "\(udn)", "from": "\(oldHost ?? "")", "to": "\(move.endpoint.host ?? "")"])
        if plannedWake.map({ nextWake < $0 }) ?? true { planTimer() }
    }

    private var nextWake: Duration {
        min(nextSearch, known.values.map(\.expires).min() ?? nextSearch, leaving.values.min() ?? nextSearch)
    }

    private func planTimer() {
        timer?.cancel()
        guard !stopped else { return }
        let wake = nextWake
        plannedWake = wake
        timer = Task { [weak self, clock] in
            try? await clock.sleep(until: wake)
            guard !Task.isCancelled else { return }
            await self?.tick()
        }
    }

    private func tick() {
        let now = clock.now()
        for (udn, entry) in known where entry.expires <= now {
            known[udn] = nil
            leaving[udn] = nil
            continuation.yield(.lost(endpointID: udn))
            logger.info("UPnP device expired (max-age passed)", metadata: ["udn": "\(udn)"])
        }
        for (udn, deadline) in leaving where deadline <= now {
            leaving[udn] = nil
            if known.removeValue(forKey: udn) != nil { continuation.yield(.lost(endpointID: udn)) }
        }
        moves = moves.filter { known[$0.key] != nil }
        if nextSearch <= now {
            searchEverywhere()
            nextSearch = now + searchInterval
            searchInterval = min(searchInterval * 2, configuration.maximumSearchInterval)
        }
        planTimer()
    }
}

extension Endpoint {
    /// The interface name of an IP endpoint.
    var interfaceName: String? {
        if case .ip(_, _, let interface) = address { return interface }
        return nil
    }

    /// The host of an IP endpoint.
    var host: String? {
        if case .ip(let host, _, _) = address { return host }
        return nil
    }
}

/// One mDNS browse for every subscriber: started with the first, stopped with the last; a
/// subscriber that comes while it runs is told what it has found so far.
final class DNSSDBrowseHub: Sendable {
    private struct State {
        var subscribers: [UInt64: DiscoveryEvents.Continuation] = [:]
        var known: [String: Endpoint] = [:]
        var browse: Task<Void, Never>?
        var next: UInt64 = 0
    }

    let lan: LANTransport
    let serviceTypes: [String]
    private let state = Mutex(State())

    init(lan: LANTransport, serviceTypes: [String]) {
        self.lan = lan
        self.serviceTypes = serviceTypes
    }

    func subscribe() -> DiscoveryEvents {
        let (stream, continuation) = DiscoveryEvents.makeStream()
        let id = state.withLock { state -> UInt64 in
            state.next += 1
            state.subscribers[state.next] = continuation
            for endpoint in state.known.values { _ = continuation.yield(.appeared(endpoint)) }
            if state.browse == nil {
                let events = lan.browse(serviceTypes: serviceTypes)
                state.browse = Task { [weak self] in
                    for await event in events { self?.fanOut(event) }
                }
            }
            return state.next
        }
        continuation.onTermination = { [weak self] _ in self?.leave(id) }
        return stream
    }

    private func fanOut(_ event: DiscoveryEvent) {
        let subscribers = state.withLock { state -> [DiscoveryEvents.Continuation] in
            switch event {
            case .appeared(let endpoint), .updated(let endpoint): state.known[endpoint.id] = endpoint
            case .lost(let id): state.known[id] = nil
            case .failed: break
            }
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { _ = subscriber.yield(event) }
    }

    private func leave(_ id: UInt64) {
        let browse = state.withLock { state -> Task<Void, Never>? in
            state.subscribers[id] = nil
            guard state.subscribers.isEmpty else { return nil }
            defer {
                state.browse = nil
                state.known = [:]
            }
            return state.browse
        }
        browse?.cancel()
    }
}
