#if canImport(Glibc)
import Glibc
#endif
import Logging
import MediaClock
import NIOCore
import NIOPosix
import Transport

/// DNS-SD browsing over mDNS (RFC 6762/6763): PTR → SRV/TXT → A/AAAA for named
/// service types, with known-answer suppression, TTL expiry and goodbyes.
///
/// Endpoints are keyed by the instance name (`Living Room._airplay._tcp.local`);
/// their attributes are the TXT pairs plus `serviceType` and `interfaceAddress`.
actor MDNSBrowseRun {
    private struct CachedRecord {
        var record: DNSRecord
        /// On the browser's clock.
        var received: Duration
        var expires: Duration
    }

    static let group = "224.0.0.251"
    static let maximumRecords = 4096

    private let serviceTypes: [String]
    private let interfaceNames: [String]?
    private let continuation: DiscoveryEvents.Continuation
    private let logger: Logger
    private let maximumQueryInterval: Duration
    private let sockets: MulticastSockets
    private var listener: (any Channel)?
    private var senders: MulticastSockets.Senders = [:]
    private var cache: [String: CachedRecord] = [:]
    private var reported: [String: Endpoint] = [:]
    private var queryInterval: Duration = .seconds(1)
    private var nextQuery: Duration
    private let clock: any HostClock
    private var timer: Task<Void, Never>?
    private var reader: Task<Void, Never>?
    private var stopped = false
    private let ignored: IgnoredDatagrams
    /// Queries sent (for tests).
    private(set) var queriesSent = 0
    /// Whether the next query is this browse's first: it asks for unicast answers (RFC 6762
    /// §5.4), which responders send at once instead of after their 20–120 ms multicast delay.
    private var firstQuery = true
    /// When instances that need resolving were last asked about outside the schedule.
    private var lastResolution: Duration?

    init(
        serviceTypes: [String], interfaces: [String]?, maximumQueryInterval: Duration, ignoredReportPeriod: Duration = .seconds(60),
        continuation: DiscoveryEvents.Continuation, clock: any HostClock, logger: Logger
    ) {
        self.clock = clock
        let sockets = MulticastSockets(maximumDatagram: 9000)
        self.sockets = sockets
        self.ignored = IgnoredDatagrams(protocolName: "mDNS", sockets: sockets, period: ignoredReportPeriod, logger: logger)
        self.serviceTypes = serviceTypes.map { $0.hasSuffix(".local") ? $0 : $0 + ".local" }
        self.interfaceNames = interfaces
        self.maximumQueryInterval = maximumQueryInterval
        self.continuation = continuation
        self.logger = logger
        self.nextQuery = clock.now() + .seconds(1)
    }

    func start() async {
        let stream = sockets.datagrams
        reader = Task { [weak self] in
            for await datagram in stream {
                guard let self else { return }
                await self.handle(datagram)
            }
        }
        do {
            listener = try await sockets.bind(host: "0.0.0.0", port: 5353, sendingOn: nil, ttl: 255, reusePort: true)
        } catch {
            logger.notice("mDNS browsing unavailable (port 5353: \(error))")
            return
        }
        await refresh()
        planTimer()
    }

    func stop() async {
        stopped = true
        timer?.cancel()
        reader?.cancel()
        sockets.finish()
        for sender in senders.values { try? await sender.channel.close() }
        senders = [:]
        try? await listener?.close()
        ignored.finish()
    }


    /// Joins the group and opens a sender on new interfaces, and queries there.
    func refresh() async {
        guard !stopped, let listener else { return }
        senders = await sockets.follow(interfaces: interfaceNames, senders: senders, listener: listener, group: Self.group, port: 5353, logger: logger).senders
        query()
    }

    /// One query per interface: PTR for each type with the known answers
    /// still above half their TTL, and SRV/TXT/A for instances not yet resolved.
    /// - Parameter unicast: ask for unicast answers (the browse's first query, and what is asked
    ///   outside the schedule to resolve a new instance): responders send those at once.
    private func query(unicast: Bool = false) {
        let now = clock.now()
        let unicast = unicast || firstQuery
        firstQuery = false
        var message = DNSMessage(isResponse: false)
        for type in serviceTypes { message.questions.append(DNSQuestion(name: type, type: .ptr, unicastResponse: unicast)) }
        for entry in cache.values {
            guard case .ptr = entry.record.data, serviceTypes.contains(where: { $0.lowercased() == entry.record.name.lowercased() }) else { continue }
            let lifetime = entry.expires - entry.received
            if entry.expires - now > lifetime / 2 { message.answers.append(entry.record) }
        }
        for instance in instances() {
            let records = resolution(of: instance)
            if records.srv == nil { message.questions.append(DNSQuestion(name: instance, type: .srv, unicastResponse: unicast)) }
            if records.txt == nil { message.questions.append(DNSQuestion(name: instance, type: .txt, unicastResponse: unicast)) }
            if let srv = records.srv, case .srv(_, _, _, let target) = srv.data, records.address == nil {
                message.questions.append(DNSQuestion(name: target, type: .a, unicastResponse: unicast))
            }
        }
        let bytes = message.encoded()
        for sender in senders.values {
            sockets.send(bytes, on: sender.channel, to: Self.group, port: 5353)
            queriesSent += 1
        }
    }

    private func key(_ record: DNSRecord) -> String {
        "\(record.name.lowercased())|\(record.type)|\(record.data)"
    }

    private func handle(_ datagram: Datagram) {
        guard !stopped else { return }
        ignored.countDropped()
        let message: DNSMessage
        do {
            message = try DNSMessage.decode(datagram.bytes)
        } catch {
            ignored.count("malformed")
            return
        }
        guard message.isResponse else { return }
        let now = clock.now()
        var goodbyes = false
        for record in message.records {
            // A cache-flush record replaces what we hold for that name and type (RFC 6762 §10.2).
            if record.cacheFlush && record.ttl > 0 {
                for (existing, entry) in cache where entry.record.name.lowercased() == record.name.lowercased() && entry.record.type == record.type
                    && entry.received < now - .seconds(1)
                {
                    cache[existing] = nil
                }
            }
            if record.ttl == 0 {
                cache[key(record)] = nil
                goodbyes = true
            } else if cache.count >= Self.maximumRecords && cache[key(record)] == nil {
                // Bounded: a responder flooding records cannot grow the cache without limit.
                continue
            } else {
                cache[key(record)] = CachedRecord(record: record, received: now, expires: now + .seconds(Int(min(record.ttl, 86_400))))
            }
        }
        if goodbyes { logger.debug("mDNS goodbye", metadata: ["from": "\(datagram.host)"]) }
        let interface = senders.values.map(\.interface).first { $0.contains(datagram.host) }
        publish(interface: interface)
        resolveSoon(now: now)
        planTimer()
    }

    /// A responder that answers PTR without the instance's SRV, TXT and address (python-zeroconf
    /// does) is asked for them at once rather than at the next scheduled query, a second or
    /// more away; at most every 200 ms, so a flood of PTRs makes no flood of queries.
    private func resolveSoon(now: Duration) {
        guard lastResolution.map({ now - $0 >= .milliseconds(200) }) ?? true else { return }
        let unresolved = instances().contains { instance in
            let records = resolution(of: instance)
            return records.srv == nil || records.txt == nil || records.address == nil
        }
        guard unresolved else { return }
        lastResolution = now
        query(unicast: true)
    }

    private func instances() -> [String] {
        cache.values.compactMap { entry -> String? in
            guard case .ptr(let instance) = entry.record.data, serviceTypes.contains(where: { $0.lowercased() == entry.record.name.lowercased() }) else {
                return nil
            }
            return instance
        }
    }

    private func resolution(of instance: String) -> (srv: DNSRecord?, txt: DNSRecord?, address: String?, serviceType: String?) {
        let name = instance.lowercased()
        let records = cache.values.map(\.record)
        let srv = records.first { $0.name.lowercased() == name && $0.type == DNSRecord.RecordType.srv.rawValue }
        let txt = records.first { $0.name.lowercased() == name && $0.type == DNSRecord.RecordType.txt.rawValue }
        var address: String?
        if let srv, case .srv(_, _, _, let target) = srv.data {
            for record in records where record.name.lowercased() == target.lowercased() {
                if case .a(let ipv4) = record.data { address = ipv4 }
            }
        }
        let type = records.first { record in
            if case .ptr(let target) = record.data { return target.lowercased() == name }
            return false
        }?.name
        return (srv, txt, address, type)
    }

    /// Reports instances that became resolvable or changed, and those that went.
    private func publish(interface: MulticastInterface?) {
        var seen: Set<String> = []
        for instance in instances() {
            let records = resolution(of: instance)
            guard let srv = records.srv, case .srv(_, _, let port, _) = srv.data, let address = records.address else { continue }
            seen.insert(instance)
            var attributes: [String: String] = ["serviceType": records.serviceType ?? ""]
            if case .txt(let strings) = records.txt?.data {
                for string in strings.prefix(64) {
                    let parts = string.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                    attributes[String(parts[0].prefix(64))] = parts.count == 2 ? String(parts[1].prefix(256)) : ""
                }
            }
            let facing = interface ?? senders.values.map(\.interface).first { $0.contains(address) }
            if let facing { attributes["interfaceAddress"] = facing.address }
            let endpoint = Endpoint(
                id: instance, transport: "lan", address: .ip(host: address, port: port, interface: facing?.name), attributes: attributes,
                services: [records.serviceType ?? ""])
            if let previous = reported[instance] {
                if previous != endpoint {
                    reported[instance] = endpoint
                    continuation.yield(.updated(endpoint))
                }
            } else {
                reported[instance] = endpoint
                continuation.yield(.appeared(endpoint))
                logger.info("mDNS service found", metadata: ["instance": "\(instance)", "address": "\(address):\(port)"])
            }
        }
        for instance in reported.keys where !seen.contains(instance) {
            reported[instance] = nil
            continuation.yield(.lost(endpointID: instance))
        }
    }

    private func planTimer() {
        timer?.cancel()
        guard !stopped else { return }
        let wake = min(nextQuery, cache.values.map(\.expires).min() ?? nextQuery)
        timer = Task { [weak self, clock] in
            try? await clock.sleep(until: wake)
            guard !Task.isCancelled else { return }
            await self?.tick()
        }
    }

    private func tick() {
        let now = clock.now()
        let before = cache.count
        cache = cache.filter { $0.value.expires > now }
        if cache.count != before { publish(interface: nil) }
        if nextQuery <= now {
            query()
            nextQuery = now + queryInterval
            queryInterval = min(queryInterval * 2, maximumQueryInterval)
        }
        planTimer()
    }

    /// What the browser knows, for tests: reported endpoints and queries sent.
    var snapshot: (endpoints: [Endpoint], queries: Int) { (Array(reported.values), queriesSent) }
}
