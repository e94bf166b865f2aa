#if canImport(Glibc)
import Glibc
#endif
import IPNetwork
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
    static let group = "224.0.0.251"
    static let maximumRecords = 4096
    /// Records taken in per second from one source, and from all (RFC 6762 answers are a few
    /// records; a flood is dropped and counted, never worked through).
    static let recordBudget = (perSource: SourceRateBudget.Rate(perSecond: 200, burst: 400),
                               overall: SourceRateBudget.Rate(perSecond: 4000, burst: 8000))
    /// Questions and known answers in one query: one datagram, whatever the cache holds.
    static let maximumQuestions = 48

    private let serviceTypes: [String]
    private let interfaceNames: [String]?
    private let continuation: DiscoveryEvents.Continuation
    private let logger: Logger
    private let maximumQueryInterval: Duration
    private let sockets: MulticastSockets
    private var listener: (any Channel)?
    private var senders: MulticastSockets.Senders = [:]
    private var cache: MDNSCache
    private var budget: SourceRateBudget
    private var reported: [String: Endpoint] = [:]
    private var queryInterval: Duration = .seconds(1)
    private var nextQuery: Duration
    private let clock: any HostClock
    private var timer: Task<Void, Never>?
    /// When ``timer`` wakes.
    private var plannedWake: Duration?
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
        self.ignored = IgnoredDatagrams(protocolName: "mDNS", sockets: sockets, period: ignoredReportPeriod, clock: clock, logger: logger)
        self.serviceTypes = serviceTypes.map { $0.hasSuffix(".local") ? $0 : $0 + ".local" }
        self.cache = MDNSCache(serviceTypes: self.serviceTypes, limits: MDNSCache.Limits(records: Self.maximumRecords))
        self.budget = SourceRateBudget(perSource: Self.recordBudget.perSource, overall: Self.recordBudget.overall)
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
    /// still above half their TTL, and SRV/TXT/A for instances not yet resolved,
    /// all within one datagram (``maximumQuestions``) whatever the cache holds.
    /// - Parameter unicast: ask for unicast answers (the browse's first query, and what is asked
    ///   outside the schedule to resolve a new instance): responders send those at once.
    private func query(unicast: Bool = false) {
        let now = clock.now()
        let unicast = unicast || firstQuery
        firstQuery = false
        var message = DNSMessage(isResponse: false)
        for type in serviceTypes { message.questions.append(DNSQuestion(name: type, type: .ptr, unicastResponse: unicast)) }
        message.answers = cache.knownAnswers(now: now, limit: Self.maximumQuestions)
        for instance in cache.unresolved.sorted() {
            guard message.questions.count < Self.maximumQuestions else { break }
            let missing = cache.missing(for: instance)
            if missing.srv { message.questions.append(DNSQuestion(name: instance, type: .srv, unicastResponse: unicast)) }
            if missing.txt { message.questions.append(DNSQuestion(name: instance, type: .txt, unicastResponse: unicast)) }
            if let target = missing.target { message.questions.append(DNSQuestion(name: target, type: .a, unicastResponse: unicast)) }
        }
        let bytes = message.encoded()
        for sender in senders.values {
            sockets.send(bytes, on: sender.channel, to: Self.group, port: 5353)
            queriesSent += 1
        }
    }

    private func handle(_ datagram: Datagram) {
        guard !stopped else { return }
        ignored.countDropped()
        // RFC 6762 §11: only a source on a link we browse may answer (NIO does not hand up the
        // received TTL, so the check is the source's subnet; a router does not forward
        // 224.0.0.251, and a unicast answer from afar is refused here).
        guard let interface = senders.values.map(\.interface).first(where: { $0.contains(datagram.host) }) else {
            ignored.count("off-link source")
            return
        }
        let message: DNSMessage
        do {
            message = try DNSMessage.decode(datagram.bytes)
        } catch {
            ignored.count("malformed")
            return
        }
        guard message.isResponse else { return }
        let now = clock.now()
        let records = message.records
        guard budget.spend(Double(max(1, records.count)), by: datagram.host, now: now) else {
            ignored.count("over the source's record budget")
            return
        }
        let refused = cache.ingest(records, from: datagram.host, now: now)
        // A datagram none of whose records was kept is counted once, under its main reason.
        if !records.isEmpty, refused.values.reduce(0, +) == records.count, let reason = refused.max(by: { $0.value < $1.value })?.key {
            ignored.count(reason.rawValue)
        }
        if records.contains(where: { $0.ttl == 0 }) { logger.debug("mDNS goodbye", metadata: ["from": "\(datagram.host)"]) }
        publish(interface: interface)
        resolveSoon(now: now)
        if let expiry = cache.earliestExpiry, plannedWake.map({ expiry < $0 }) ?? true { planTimer() }
    }

    /// A responder that answers PTR without the instance's SRV, TXT and address (python-zeroconf
    /// does) is asked for them at once rather than at the next scheduled query, a second or
    /// more away; at most every 200 ms, so a flood of PTRs makes no flood of queries.
    private func resolveSoon(now: Duration) {
        guard lastResolution.map({ now - $0 >= .milliseconds(200) }) ?? true, !cache.unresolved.isEmpty else { return }
        lastResolution = now
        query(unicast: true)
    }

    /// Reports the instances that changed since the last call: those that resolve (appeared or
    /// updated) and those that no longer do (lost). Only changed instances are looked at.
    private func publish(interface: MulticastInterface?) {
        for instance in cache.takeChanged() {
            guard let resolution = cache.resolve(instance) else {
                if let previous = reported.removeValue(forKey: instance) {
                    continuation.yield(.lost(endpointID: previous.id))
                }
                continue
            }
            var attributes: [String: String] = ["serviceType": resolution.serviceType]
            for string in resolution.txt.prefix(64) {
                let parts = string.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard let key = parts.first else { continue }
                attributes[String(key.prefix(64))] = parts.count == 2 ? String(parts[1].prefix(256)) : ""
            }
            let facing = senders.values.map(\.interface).first { $0.contains(resolution.host) } ?? interface
            let endpoint = Endpoint(
                id: resolution.instance, transport: "lan", address: .ip(host: resolution.host, port: resolution.port, interface: facing?.name),
                attributes: attributes, services: [resolution.serviceType], facts: EndpointFacts(interfaceAddress: facing?.address))
            if let previous = reported[instance] {
                if previous != endpoint {
                    reported[instance] = endpoint
                    continuation.yield(.updated(endpoint))
                }
            } else {
                reported[instance] = endpoint
                continuation.yield(.appeared(endpoint))
                logger.info("mDNS service found", metadata: ["instance": "\(resolution.instance)", "address": "\(resolution.host):\(resolution.port)"])
            }
        }
    }

    private func planTimer() {
        timer?.cancel()
        guard !stopped else { return }
        // Expiries are swept at most four times a second: records expiring one after another cannot
        // make a wake-up (and a sweep) each.
        let earliestSweep = clock.now() + .milliseconds(250)
        let due = min(cache.earliestExpiry ?? nextQuery, cache.earliestRefresh ?? nextQuery)
        let wake = min(nextQuery, max(due, earliestSweep))
        plannedWake = wake
        timer = Task { [weak self, clock] in
            try? await clock.sleep(until: wake)
            guard !Task.isCancelled else { return }
            await self?.tick()
        }
    }

    private func tick() {
        let now = clock.now()
        cache.expire(now: now)
        publish(interface: nil)
        // The records in use are asked for again before their TTL runs out (one datagram a tick
        // at most, so a host that announces short TTLs costs at most four queries a second).
        let refresh = cache.refreshQuestions(now: now, limit: Self.maximumQuestions)
        if !refresh.isEmpty {
            var message = DNSMessage(isResponse: false)
            message.questions = refresh
            let bytes = message.encoded()
            for sender in senders.values {
                sockets.send(bytes, on: sender.channel, to: Self.group, port: 5353)
                queriesSent += 1
            }
        }
        if nextQuery <= now {
            query()
            nextQuery = now + queryInterval
            queryInterval = min(queryInterval * 2, maximumQueryInterval)
        }
        planTimer()
    }

    /// What the browser knows, for tests: reported endpoints and queries sent.
    var snapshot: (endpoints: [Endpoint], queries: Int) { (Array(reported.values), queriesSent) }

    /// Instances resolved so far (for tests: the work the datagrams caused).
    var resolutionsRun: Int { cache.resolutionsRun }
}
