#if canImport(Glibc)
import Glibc
#endif
public import IOReactor
import IPNetwork
public import MediaClock
public import PTP
import Synchronization
public import Transport

/// The box as PTP master (IEEE 1588, two-step) for the AirPlay 2 receivers of its routes:
/// Announce once a second (and to a new follower at once) and Sync + Follow_Up eight times a
/// second — 64 for a follower a caller names (``syncQuickly(_:_:)``) — sent unicast to each follower from the event and general ports to the same ports (319 →
/// 319, 320 → 320: nqptp drops anything else, and follows only the master its client names —
/// see Docs/airplay.md for why this is not linuxptp). The time announced is ``clock``'s, the timeline routes play on.
///
/// Only followers the caller set are served: a Delay_Req from any other address is dropped,
/// and each follower's requests are rate-limited (a Delay_Resp is barely larger than its
/// request, but a spoofed source would otherwise aim our answers at a third host). With no
/// followers the master sleeps: no timer, no wake-up.
///
/// A follower that announces a better clock than ours (a receiver that insists on being
/// grandmaster, as HomePodOS 27 is reported to) is not fought: the master follows its clock
/// (``PTPForeignClock``: its Sync/Follow_Up, our Delay_Req), stops sending it Announce and Sync
/// once that clock is measured, and ``reading(for:)`` gives that clock for its stream's sync
/// packets. Only a follower's own Announce counts, from its address and PTP ports — never a
/// grandmaster any host announces — and it lasts while it keeps announcing. A LAN host can
/// forge that address, so one message decides little: another clock at the address replaces
/// the one followed only after two Announces within four seconds, a worse Announce ends it
/// only in its own name, and a grandmaster whose Syncs never come is served our clock all
/// along. It is also reported through `foreignMaster`.
public final class PTPMaster: Sendable {
    /// Ports and rates; the ports differ from 319/320 only in tests (binding those needs
    /// root or `CAP_NET_BIND_SERVICE`).
    public struct Configuration: Sendable {
        public var bindAddress = "0.0.0.0"
        public var eventPort: UInt16 = 319
        public var generalPort: UInt16 = 320
        public var syncInterval: Duration = .milliseconds(125)
        /// How often a follower kept quick (``PTPMaster/syncQuickly(_:_:)``) gets a Sync: a
        /// whole fraction of ``syncInterval``.
        public var quickSyncInterval: Duration = .microseconds(15_625)
        public var announceEvery = 8
        public var maximumFollowers = 16
        public init() {}
    }

    /// What was sent so far (tests, `status`).
    public struct Statistics: Sendable, Equatable {
        public var syncs = 0
        public var announces = 0
        public var delayResponses = 0
        public var refusedRequests = 0
        /// Delay_Reqs sent to followers that are grandmasters, and their Sync/Follow_Up pairs taken.
        public var delayRequests = 0
        public var foreignSyncs = 0
    }

    private struct State {
        var followers: [String] = []
        /// Followers that get quick Syncs for as long as they follow (``syncQuickly(_:_:)``),
        /// and those that had an Announce.
        var quick: Set<String> = []
        var announced: Set<String> = []
        var sequence: UInt16 = 0
        var announceSequence: UInt16 = 0
        var delaySequence: UInt16 = 0
        var ticker: Task<Void, Never>?
        var statistics = Statistics()
        /// A grandmaster follower sends 8 Syncs, 8 Follow_Ups, 8 Delay_Resps and an Announce a
        /// second; a follower 8 Delay_Reqs. Each costs a decode; a Delay_Req also an answer of its size.
        var budget = SourceRateBudget(perSource: .init(perSecond: 48, burst: 48), overall: .init(perSecond: 384, burst: 384), maximumSources: 32)
        /// Followers that announced a better clock, by address (followers only, so at most ``Configuration/maximumFollowers``).
        var grandmasters: [String: PTPForeignClock] = [:]
        /// Another clock announced where a grandmaster is followed, not yet qualified (followers only).
        var candidates: [String: AnnounceCandidate] = [:]
        /// When each follower last sent a Delay_Req (followers only): one that does measures its
        /// path's delay itself, as IEEE 1588 has it; nqptp never does.
        var delayRequests: [String: Duration] = [:]
    }

    /// A clock that announced itself where another grandmaster is followed: its first Announce.
    struct AnnounceCandidate: Sendable {
        var source: PTPPortIdentity
        var grandmaster: UInt64
        var since: Duration
    }

    /// How soon a second Announce of another clock must follow the first for it to replace the
    /// grandmaster followed at that address: four announce intervals of a second.
    static let announceQualification: Duration = .seconds(4)

    /// How long after its last Delay_Req a follower still counts as measuring its path
    /// (followers send eight a second, or one a few seconds).
    public static let pathMeasurementMemory: Duration = .seconds(10)

    public let identity: PTPPortIdentity
    public let configuration: Configuration
    private let clock: any HostClock
    private let event: UDPSocket
    private let general: UDPSocket
    private let state = Mutex(State())
    private let listeners: Mutex<[Task<Void, Never>]> = Mutex([])
    private let foreignMaster: @Sendable (String, PTPAnnounce) -> Void

    public init(
        identity: PTPPortIdentity, clock: any HostClock, configuration: Configuration = Configuration(), reactor: IOReactor = .shared,
        foreignMaster: @escaping @Sendable (String, PTPAnnounce) -> Void = { _, _ in }
    ) throws(TransportError) {
        self.identity = identity
        self.configuration = configuration
        self.clock = clock
        self.foreignMaster = foreignMaster
        event = try UDPSocket(binding: UDPAddress(host: configuration.bindAddress, port: configuration.eventPort), clock: clock, reactor: reactor)
        do {
            general = try UDPSocket(binding: UDPAddress(host: configuration.bindAddress, port: configuration.generalPort), clock: clock, reactor: reactor)
        } catch {
            event.close()
            throw error
        }
        let event = event, general = general
        listeners.withLock {
            $0 = [
                Task { [weak self] in
                    for await datagram in event.datagrams { self?.received(datagram.bytes, from: datagram.from, at: datagram.receivedAt) }
                },
                Task { [weak self] in
                    for await datagram in general.datagrams { self?.received(datagram.bytes, from: datagram.from, at: datagram.receivedAt) }
                },
            ]
        }
    }

    deinit { close() }

    /// The receivers to serve (IPv4 addresses); an empty list stops the master's ticks.
    public func setFollowers(_ hosts: [String]) {
        let unique = Array(Set(hosts).sorted().prefix(configuration.maximumFollowers))
        let stop = state.withLock { state -> Task<Void, Never>? in
            state.followers = unique
            state.announced.formIntersection(unique)
            state.quick.formIntersection(unique)
            state.grandmasters = state.grandmasters.filter { unique.contains($0.key) }
            state.candidates = state.candidates.filter { unique.contains($0.key) }
            state.delayRequests = state.delayRequests.filter { unique.contains($0.key) }
            if unique.isEmpty {
                defer { state.ticker = nil }
                return state.ticker
            }
            // Made under the lock: two callers cannot both start one.
            if state.ticker == nil { state.ticker = Task { [weak self] in await self?.tick() ?? () } }
            return nil
        }
        stop?.cancel()
    }

    public var followers: [String] { state.withLock { $0.followers } }

    /// Sends `host` (a follower) a Sync every ``Configuration/quickSyncInterval`` from the
    /// master's next step for as long as it follows, or no longer. For a follower on a slow,
    /// jittery link that filters our Follow_Ups as nqptp does, which counts Follow_Ups, not
    /// seconds: it takes the soonest of its first second as its start (of 64: within ~0.1 ms
    /// of the link's least; of eight, anywhere in the first ~0.6 ms of 0–5 ms of jitter — one
    /// benchmark run was 0.6 ms off the receiver beside it for 15 s), rises by a 256th of a
    /// later one's delay each (seconds to settle, not half a minute), and wanders around where
    /// it settles as far at either rate but eight times as fast, so a minute or two of it
    /// averages nearer (in simulation of its filter on 0–5 ms of even jitter, the 95th
    /// percentile of its distance from that point over two minutes: 0.28 ms at eight a
    /// second, at worst 0.63; 0.19 ms at 64, at worst 0.21). AirPlay streams do not ask for
    /// it: in the benchmark it showed no gain through the runs' spread, for 1.5–2 % of a core,
    /// and at 64 a second nqptp follows a burst of late packets eight times as far
    /// (Docs/airplay.md, "Syncs 64 a second: tried, not used"). On a LAN it buys nothing.
    public func syncQuickly(_ host: String, _ quickly: Bool) {
        state.withLock { state in
            if quickly, state.followers.contains(host) { state.quick.insert(host) } else { state.quick.remove(host) }
        }
    }

    public var statistics: Statistics { state.withLock { $0.statistics } }

    /// The clock `host`'s stream is timed by and the time on it: the grandmaster's where `host`
    /// announced a better clock and at least one Sync of it was measured, else ours.
    public func reading(for host: String) -> (clockIdentity: UInt64, time: Duration) {
        let now = clock.now()
        let foreign = state.withLock { state -> (UInt64, Int64)? in
            guard let grandmaster = state.grandmasters[host], now - grandmaster.lastAnnounce < PTPForeignClock.silenceLimit,
                let offset = grandmaster.offset
            else { return nil }
            return (grandmaster.announce.grandmaster, offset)
        }
        guard let (identity, offset) = foreign else { return (self.identity.clock, now) }
        return (identity, now + .nanoseconds(offset))
    }

    /// Whether `host` measures its path's delay itself: it sent a Delay_Req within
    /// ``pathMeasurementMemory`` (IEEE 1588's followers do; nqptp, shairport-sync's, never does).
    public func measuresPathDelay(_ host: String) -> Bool {
        let now = clock.now()
        return state.withLock { state in state.delayRequests[host].map { now - $0 < Self.pathMeasurementMemory } ?? false }
    }

    /// Whether `host` announced itself grandmaster and its offset is not measured both ways yet.
    public func isSettling(_ host: String) -> Bool {
        state.withLock { state in state.grandmasters[host].map { !$0.isSettled } ?? false }
    }

    /// What our Announce says: a default clock (class 248), priorities 128 — below any receiver
    /// that wants to lead, above none that does not.
    var ownAnnounce: PTPAnnounce {
        PTPAnnounce(origin: PTPTimestamp(clock.now()), priority1: 128, clockClass: 248, priority2: 128, grandmaster: identity.clock)
    }

    /// Stops sending and closes both sockets.
    public func close() {
        state.withLock { state in
            state.ticker?.cancel()
            state.ticker = nil
            state.followers = []
        }
        for listener in listeners.withLock({ $0 }) { listener.cancel() }
        event.close()
        general.close()
    }

    /// Runs on a grid of ``Configuration/quickSyncInterval`` steps, ``Configuration/syncInterval``
    /// apart (a whole number of them) unless a follower is kept quick: then every step.
    private func tick() async {
        let quickInterval = min(configuration.syncInterval, max(.milliseconds(1), configuration.quickSyncInterval))
        let stepsPerSync = max(1, Int(configuration.syncInterval / quickInterval))
        let stepsPerAnnounce = stepsPerSync * max(1, configuration.announceEvery)
        var step = 0
        var next = clock.now()
        while !Task.isCancelled {
            let started = clock.now()
            let (followers, quick, unannounced, grandmasters) = state.withLock { state -> ([String], [String], [String], [String]) in
                state.grandmasters = state.grandmasters.filter { started - $0.value.lastAnnounce < PTPForeignClock.silenceLimit }
                // A grandmaster is served our clock until its own is measured: an Announce alone
                // (which a LAN host can forge in a receiver's name) does not cut it off.
                let followers = state.followers.filter { state.grandmasters[$0]?.offset == nil }
                let quick = followers.filter { state.quick.contains($0) }
                return (followers, quick, followers.filter { !state.announced.contains($0) }, state.followers.filter { state.grandmasters[$0] != nil })
            }
            guard !followers.isEmpty || !grandmasters.isEmpty else { return }
            let regular = step % stepsPerSync == 0
            if step % stepsPerAnnounce == 0 { announce(to: followers) } else { announce(to: unannounced) }
            sync(to: regular ? followers : quick, interval: regular ? configuration.syncInterval : quickInterval)
            if regular { requestDelay(from: grandmasters) }
            // No follower kept quick: on to the next regular step.
            let steps = quick.isEmpty ? stepsPerSync - step % stepsPerSync : 1
            step += steps
            next += quickInterval * steps
            // A late wake-up does not make up missed rounds: the next is a step from now.
            let now = clock.now()
            if next < now { next = now + quickInterval * steps }
            do { try await clock.sleep(until: next) } catch { return }
        }
    }

    private func logInterval(_ interval: Duration) -> Int8 {
        let seconds = Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18
        return Int8(clamping: Int((seconds > 0 ? log2(seconds) : -7).rounded()))
    }

    private func announce(to followers: [String]) {
        guard !followers.isEmpty else { return }
        let sequence = state.withLock { state -> UInt16 in
            defer { state.announceSequence &+= 1 }
            state.announced.formUnion(followers)
            state.statistics.announces += 1
            return state.announceSequence
        }
        let message = PTPMessage(
            kind: .announce, source: identity, sequence: sequence, logInterval: logInterval(configuration.syncInterval * configuration.announceEvery),
            body: .announce(ownAnnounce))
        for host in followers { general.send(message.bytes, to: UDPAddress(host: host, port: configuration.generalPort)) }
    }

    private func sync(to followers: [String], interval syncInterval: Duration) {
        guard !followers.isEmpty else { return }
        let sequence = state.withLock { state -> UInt16 in
            defer { state.sequence &+= 1 }
            state.statistics.syncs += 1
            return state.sequence
        }
        let interval = logInterval(syncInterval)
        // Two-step, as ptp4l: the Sync's own timestamp is left 0, the Follow_Up carries the time
        // it left, taken as close to its `sendto` as user space can (the bytes are ready first).
        let sync = PTPMessage(kind: .sync, source: identity, sequence: sequence, flags: PTPMessage.twoStepFlag, logInterval: interval, body: .timestamp(PTPTimestamp(seconds: 0, nanoseconds: 0))).bytes
        // The Follow_Up is made once and its time written in place: between the timestamp and
        // the Follow_Up's send there is only the Sync's `sendto` (nqptp times the Follow_Up's
        // arrival, so what runs there shows up in its estimate).
        var followUp = PTPMessage(kind: .followUp, source: identity, sequence: sequence, logInterval: interval, body: .preciseOrigin(PTPTimestamp(seconds: 0, nanoseconds: 0))).bytes
        let addresses = Self.sendingOrder(followers, round: sequence).map {
            (UDPAddress(host: $0, port: configuration.eventPort), UDPAddress(host: $0, port: configuration.generalPort))
        }
        for (eventAddress, generalAddress) in addresses {
            let sent = clock.now()
            event.send(sync, to: eventAddress)
            followUp.replaceSubrange(PTPMessage.headerLength..<(PTPMessage.headerLength + PTPTimestamp.length), with: PTPTimestamp(sent).bytes)
            general.send(followUp, to: generalAddress)
        }
    }

    /// The followers in the order a round's Syncs go out: each round starts one further on. A
    /// follower that times a Follow_Up when its process wakes (nqptp does, after `select`) is
    /// woken at another moment of the round than the one before or after it — an idle core to
    /// wake, a core still busy with the one before — and a fixed order would leave each
    /// follower with its own constant error; rotated, every follower meets each moment in turn,
    /// and nqptp's filter, which leans to the soonest, takes the quickest for all of them.
    static func sendingOrder(_ followers: [String], round: UInt16) -> [String] {
        guard followers.count > 1 else { return followers }
        let first = Int(round) % followers.count
        return Array(followers[first...] + followers[..<first])
    }

    /// A Delay_Req to each follower that is grandmaster: its Delay_Resp gives its time plus the path's delay.
    private func requestDelay(from grandmasters: [String]) {
        guard !grandmasters.isEmpty else { return }
        let interval = logInterval(configuration.syncInterval)
        for host in grandmasters {
            let sequence = state.withLock { state -> UInt16 in
                defer { state.delaySequence &+= 1 }
                state.statistics.delayRequests += 1
                return state.delaySequence
            }
            let sent = clock.now()
            let request = PTPMessage(kind: .delayRequest, source: identity, sequence: sequence, logInterval: interval, body: .timestamp(PTPTimestamp(sent)))
            state.withLock { $0.grandmasters[host]?.delayRequestSent(sequence, at: sent) }
            event.send(request.bytes, to: UDPAddress(host: host, port: configuration.eventPort))
        }
    }

    private func received(_ bytes: [UInt8], from address: UDPAddress, at arrival: Duration) {
        guard let message = try? PTPMessage(decoding: bytes) else { return }
        // Bound to where the follower was learned: its address, and PTP's own ports.
        let (known, allowed) = state.withLock { state -> (Bool, Bool) in
            guard state.followers.contains(address.host) else { return (false, false) }
            let allowed = state.budget.spend(1, by: address.host, now: clock.now())
            if !allowed { state.statistics.refusedRequests += 1 }
            return (true, allowed)
        }
        guard known, allowed, address.port == configuration.eventPort || address.port == configuration.generalPort else { return }
        switch message.body {
        case .timestamp where message.kind == .delayRequest:
            let now = clock.now()
            state.withLock { state in
                state.statistics.delayResponses += 1
                state.delayRequests[address.host] = now
            }
            let response = PTPMessage(
                kind: .delayResponse, source: identity, sequence: message.sequence, logInterval: logInterval(configuration.syncInterval),
                body: .delayResponse(received: PTPTimestamp(arrival), requester: message.source))
            general.send(response.bytes, to: UDPAddress(host: address.host, port: configuration.generalPort))
        case .announce(let announce) where message.source.clock != identity.clock:
            let ours = ownAnnounce
            let now = clock.now()
            state.withLock { state in
                let known = state.grandmasters[address.host]
                guard PTPForeignClock.isBetter(announce, than: ours) else {
                    // Only the grandmaster itself steps down: a worse Announce in another's name is not its.
                    if known?.source == message.source {
                        state.grandmasters[address.host] = nil
                        state.candidates[address.host] = nil
                    }
                    return
                }
                if var known, known.source == message.source, known.announce.grandmaster == announce.grandmaster {
                    known.announce = announce
                    known.lastAnnounce = now
                    state.grandmasters[address.host] = known
                    return
                }
                // Another clock where one is followed: taken once it announced twice within
                // ``announceQualification`` (IEEE 1588's foreign-master qualification), so one
                // forged or replayed Announce changes nothing.
                if known != nil {
                    let candidate = AnnounceCandidate(source: message.source, grandmaster: announce.grandmaster, since: now)
                    guard let earlier = state.candidates[address.host], earlier.source == candidate.source, earlier.grandmaster == candidate.grandmaster,
                        now - earlier.since <= Self.announceQualification
                    else {
                        state.candidates[address.host] = candidate
                        return
                    }
                }
                state.candidates[address.host] = nil
                state.grandmasters[address.host] = PTPForeignClock(announce: announce, source: message.source, lastAnnounce: now)
            }
            foreignMaster(address.host, announce)
        case .timestamp where message.kind == .sync:
            state.withLock { state in
                guard state.grandmasters[address.host]?.source == message.source else { return }
                state.grandmasters[address.host]?.syncArrived(message.sequence, at: arrival)
            }
        case .preciseOrigin(let origin):
            state.withLock { state in
                guard state.grandmasters[address.host]?.source == message.source else { return }
                state.grandmasters[address.host]?.followUp(message.sequence, preciseOrigin: origin, now: arrival)
                state.statistics.foreignSyncs += 1
            }
        case .delayResponse(let received, let requester) where requester == identity:
            state.withLock { state in
                guard state.grandmasters[address.host]?.source == message.source else { return }
                state.grandmasters[address.host]?.delayResponse(message.sequence, received: received, now: arrival)
            }
        default:
            break
        }
    }
}
