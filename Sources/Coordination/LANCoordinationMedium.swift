#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
public import IPNetwork
public import MediaClock

/// Coordination between boxes on a LAN, over UDP: clock samples as plain
/// request/reply datagrams (a lost one is simply skipped), commands on a
/// reliable channel (acknowledged, retransmitted, delivered once). Peers are
/// configured (or found: `_mediaroute._udp`); each box runs one medium for its one
/// participant. With a ``HouseholdKey`` every datagram carries its HMAC and what
/// does not is dropped unread.
///
/// What a LAN host could do with sealed datagrams it recorded is bounded too:
/// - a peer is heard only once it has answered a challenge (a fresh random nonce) under the
///   key: a box that merely appears in `_mediaroute._udp` gets challenges, with a growing
///   pause between them, and nothing else (no clock requests to reflect elsewhere);
/// - every datagram carries its sender's instance (random per start) and a sequence number,
///   and one already seen, or older than the last 64 from that instance, is dropped: a
///   replayed request gets no answer, a replayed command is not delivered again;
/// - a clock reply counts only for a request we sent that peer in the last 5 s, once;
/// - answers to challenges are rate limited per source, and every table has a cap.
public actor LANCoordinationMedium: CoordinationMedium {
    private enum Datagram: Codable {
        case message(id: UInt64, CoordinationMessage)
        case ack(id: UInt64)
        case clockRequest(t1: Double)
        case clockReply(t1: Double, t2: Double, t3: Double)
        case challenge(nonce: UInt64)
        case response(nonce: UInt64)
    }

    /// What is sealed: the sender's instance and sequence number, then the datagram.
    private struct Envelope: Codable {
        var instance: UInt64
        var sequence: UInt64
        var body: Datagram
    }

    private struct Pending {
        let datagram: Datagram
        let peer: UDPAddress
        var attempts: Int
    }

    /// Peers at most (what `_mediaroute._udp` may make peers of); challenges outstanding, and
    /// boxes verified (peers, and boxes that have us as their peer), at most.
    public static let maximumPeers = 32
    static let maximumChallenges = 64
    /// How long a clock request may wait for its reply.
    static let clockReplyWindow: Duration = .seconds(5)

    private let socket: UDPSocket
    /// Always the system clock: arrival times are stamped by the socket's reader thread on it.
    private let clock: any HostClock
    public private(set) var peers: [UDPAddress]
    private var continuation: AsyncStream<CoordinationMessage>.Continuation?
    private var nextID: UInt64 = 0
    private var pending: [UInt64: Pending] = [:]
    private var delivered: [UDPAddress: Set<UInt64>] = [:]
    private var estimators: [UDPAddress: DriftTrackingEstimator] = [:]
    private var tasks: [Task<Void, Never>] = []
    /// Drop every n-th outgoing datagram on its first try (tests of the reliable channel); 0: never.
    private var dropEvery = 0
    private var sentCount = 0
    private let retransmitInterval: Duration
    private let maximumAttempts: Int
    private let clockInterval: Duration
    private let key: HouseholdKey?
    /// Wakes the retransmission and clock loops when there is something for them (a command
    /// waiting for its acknowledgement, peers to sample): with neither, the medium sleeps.
    private var wake: AsyncStream<Void>.Continuation?
    /// Datagrams dropped for a wrong or missing tag (for tests and the daemon's report).
    public private(set) var unauthenticated = 0
    /// Sealed datagrams dropped as replays, from unverified senders, or answering nothing we asked.
    public private(set) var refused = 0
    private let instance = UInt64.random(in: 1...UInt64.max)
    private var sequence: UInt64 = 0
    private var verified: [UDPAddress: ReplayWindow] = [:]
    /// Challenges outstanding: the nonce, when it may be sent again, and the pause after that.
    private var challenges: [UDPAddress: (nonce: UInt64, next: Duration, pause: Duration)] = [:]
    /// Clock requests sent to each verified peer and not yet answered (their t1, at most 8).
    private var clockRequests: [UDPAddress: [Double]] = [:]
    /// Challenges answered lately (a recorded challenge replayed gets no second answer), at most 256.
    private var answeredChallenges: [UInt64: Duration] = [:]
    private var answerBudget = SourceRateBudget(
        perSource: .init(perSecond: 4, burst: 8), overall: .init(perSecond: 64, burst: 128), maximumSources: 64)

    /// The address other boxes reach this one at.
    public nonisolated var localAddress: UDPAddress { socket.localAddress }

    public init(
        binding address: UDPAddress, peers: [UDPAddress],
        retransmitInterval: Duration = .milliseconds(50), maximumAttempts: Int = 40, clockInterval: Duration = .seconds(1),
        key: HouseholdKey? = nil, clock: any HostClock = SystemHostClock()
    ) throws {
        self.key = key
        self.clock = clock
        socket = try UDPSocket(binding: address, clock: clock)
        self.peers = peers
        self.retransmitInterval = retransmitInterval
        self.maximumAttempts = maximumAttempts
        self.clockInterval = clockInterval
    }

    public func setPeers(_ peers: [UDPAddress]) {
        self.peers = Array(peers.prefix(Self.maximumPeers))
        let current = Set(self.peers)
        clockRequests = clockRequests.filter { current.contains($0.key) }
        estimators = estimators.filter { current.contains($0.key) }
        delivered = delivered.filter { current.contains($0.key) }
        wake?.yield()
    }

    /// Peers that answered a challenge under the key (for tests and the daemon's report).
    public var verifiedPeers: [UDPAddress] { Array(verified.keys) }

    /// Forgets that `peer` answered a challenge: it is challenged again before it is
    /// believed (`mediaroutectl trust forget`). - Returns: whether it was verified.
    @discardableResult
    public func forgetVerification(of peer: UDPAddress) -> Bool {
        challenges[peer] = nil
        clockRequests[peer] = nil
        estimators[peer] = nil
        let known = verified.removeValue(forKey: peer) != nil
        wake?.yield()
        return known
    }

    /// Makes the first try of every n-th outgoing datagram get lost.
    public func dropEvery(_ n: Int) { dropEvery = n }

    public func join(_ participant: ParticipantID) -> AsyncStream<CoordinationMessage> {
        let (stream, continuation) = AsyncStream.makeStream(of: CoordinationMessage.self)
        self.continuation?.finish()
        self.continuation = continuation
        if tasks.isEmpty { startTasks() }
        return stream
    }

    public func broadcast(_ message: CoordinationMessage) {
        for peer in peers {
            nextID += 1
            let datagram = Datagram.message(id: nextID, message)
            pending[nextID] = Pending(datagram: datagram, peer: peer, attempts: 1)
            transmit(encode(datagram), to: peer)
        }
        wake?.yield()
    }

    public func leave(_ participant: ParticipantID) {
        continuation?.finish()
        continuation = nil
        for task in tasks { task.cancel() }
        tasks.removeAll()
        wake?.finish()
        wake = nil
        socket.close()
    }

    /// The clock estimate of each peer (offset, drift, error bound).
    public func clockEstimates() -> [UDPAddress: ClockEstimate] {
        let now = clock.now().seconds
        return estimators.compactMapValues { $0.estimate(at: now) }
    }

    /// Commands still waiting for an acknowledgement.
    public var unacknowledged: Int { pending.count }

    // MARK: Internals

    /// A received datagram: its envelope, or why it is dropped.
    private enum Received {
        case envelope(Envelope)
        case unauthenticated
        case malformed
    }

    /// Checks the seal (with a key) and reads the envelope; datagrams are bounded by the socket's buffer.
    private static func receive(_ bytes: [UInt8], key: HouseholdKey?) -> Received {
        guard bytes.count <= 16_384 else { return .malformed }
        var bytes = bytes
        if let key {
            guard let opened = key.open(bytes) else { return .unauthenticated }
            bytes = opened
        }
        guard let envelope = try? JSONDecoder().decode(Envelope.self, from: Data(bytes)) else { return .malformed }
        return .envelope(envelope)
    }

    /// What a received datagram says once its seal is checked and its envelope read, as the medium
    /// reads it: the sender's instance and sequence and the kind of datagram; nil when it is dropped
    /// (the fuzz harness's entry).
    package static func open(_ bytes: [UInt8], key: HouseholdKey?) -> (instance: UInt64, sequence: UInt64, kind: String)? {
        guard case .envelope(let envelope) = receive(bytes, key: key) else { return nil }
        let kind = switch envelope.body {
        case .message: "message"
        case .ack: "ack"
        case .clockRequest: "clockRequest"
        case .clockReply: "clockReply"
        case .challenge: "challenge"
        case .response: "response"
        }
        return (envelope.instance, envelope.sequence, kind)
    }

    /// Each datagram sealed in an envelope of its own: a retransmission is a new datagram.
    private func encode(_ datagram: Datagram) -> [UInt8] {
        sequence += 1
        let bytes = (try? Array(JSONEncoder().encode(Envelope(instance: instance, sequence: sequence, body: datagram)))) ?? []
        return key?.seal(bytes) ?? bytes
    }

    private func transmit(_ bytes: [UInt8], to peer: UDPAddress) {
        sentCount += 1
        if dropEvery > 0, sentCount % dropEvery == 0 { return }
        socket.send(bytes, to: peer)
    }

    private func startTasks() {
        let datagrams = socket.datagrams
        tasks.append(Task { [weak self] in
            for await (bytes, from, receivedAt) in datagrams {
                await self?.handle(bytes, from: from, receivedAt: receivedAt.seconds)
            }
        })
        let (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.wake = wake
        let retransmitInterval = self.retransmitInterval
        let clockInterval = self.clockInterval
        // One loop for both timers, asleep while nothing waits for an acknowledgement and there
        // is no peer to sample (an idle box has no wake-ups).
        tasks.append(Task { [weak self, clock] in
            var nextSample = clock.now()
            var wakes = wakes.makeAsyncIterator()
            while !Task.isCancelled {
                guard let (waiting, sampling) = await self?.timerState else { return }
                if !waiting && !sampling {
                    guard await wakes.next() != nil else { return }
                    continue
                }
                if sampling, clock.now() >= nextSample {
                    await self?.requestClockSamples()
                    nextSample = clock.now() + clockInterval
                }
                let next = waiting ? min(clock.now() + retransmitInterval, sampling ? nextSample : .seconds(Int64.max / 2)) : nextSample
                guard (try? await clock.sleep(until: next)) != nil else { return }
                if waiting { await self?.retransmit() }
            }
        })
    }

    /// Whether a command waits for its acknowledgement, and whether there are peers to sample.
    private var timerState: (waiting: Bool, sampling: Bool) { (!pending.isEmpty, !peers.isEmpty) }

    private func retransmit() {
        for (id, entry) in pending {
            guard entry.attempts < maximumAttempts else {
                pending[id] = nil
                continue
            }
            pending[id]?.attempts += 1
            socket.send(encode(entry.datagram), to: entry.peer)
        }
    }

    /// Clock requests to verified peers; challenges to the others whose pause has passed.
    private func requestClockSamples() {
        let now = clock.now()
        let t1 = now.seconds
        for peer in peers {
            if verified[peer] != nil {
                var sent = clockRequests[peer, default: []].filter { t1 - $0 < Self.clockReplyWindow.seconds }
                sent.append(t1)
                clockRequests[peer] = Array(sent.suffix(8))
                socket.send(encode(.clockRequest(t1: t1)), to: peer)
            } else {
                challenge(peer, now: now)
            }
        }
    }

    /// Sends `peer` a challenge unless one went out less than its pause ago (the pause doubles
    /// up to a minute: a made-up box gets ever fewer datagrams).
    private func challenge(_ peer: UDPAddress, now: Duration) {
        if let outstanding = challenges[peer], outstanding.next > now { return }
        guard challenges[peer] != nil || challenges.count < Self.maximumChallenges else { return }
        let pause = min((challenges[peer]?.pause ?? clockInterval) * 2, .seconds(60))
        let nonce = UInt64.random(in: 1...UInt64.max)
        challenges[peer] = (nonce, now + (challenges[peer]?.pause ?? clockInterval), pause)
        transmit(encode(.challenge(nonce: nonce)), to: peer)
    }

    private func handle(_ bytes: [UInt8], from peer: UDPAddress, receivedAt received: Double) {
        let envelope: Envelope
        switch Self.receive(bytes, key: key) {
        case .envelope(let received): envelope = received
        case .unauthenticated:
            unauthenticated += 1
            return
        case .malformed:
            return
        }
        // Our own datagrams sent back to us are nobody's.
        guard envelope.instance != instance else {
            refused += 1
            return
        }
        switch envelope.body {
        case .challenge(let nonce):
            let now = clock.now()
            guard answeredChallenges[nonce] == nil else {
                refused += 1
                return
            }
            if answeredChallenges.count >= 256 {
                answeredChallenges = answeredChallenges.filter { now - $0.value < .seconds(60) }
                if answeredChallenges.count >= 256, let oldest = answeredChallenges.min(by: { $0.value < $1.value })?.key { answeredChallenges[oldest] = nil }
            }
            answeredChallenges[nonce] = now
            // Answered (to the address it came from, so within a budget), and challenged back:
            // a box configured with us as a peer is verified both ways.
            guard answerBudget.spend(1, by: "\(peer)", now: clock.now()) else {
                refused += 1
                return
            }
            socket.send(encode(.response(nonce: nonce)), to: peer)
            // A box that has us as its peer (though we may not have it) is verified too, so that
            // its clock requests are answered.
            if verified[peer] == nil { challenge(peer, now: clock.now()) }
            return
        case .response(let nonce):
            guard let outstanding = challenges[peer], outstanding.nonce == nonce else {
                refused += 1
                return
            }
            challenges[peer] = nil
            guard verified[peer] != nil || verified.count < Self.maximumChallenges else {
                refused += 1
                return
            }
            verified[peer] = ReplayWindow(instance: envelope.instance, highest: envelope.sequence)
            wake?.yield()
            return
        default:
            break
        }
        guard var freshness = verified[peer], freshness.instance == envelope.instance, freshness.accept(envelope.sequence) else {
            refused += 1
            // A verified peer with a new instance restarted: it is asked again.
            if let known = verified[peer], known.instance != envelope.instance {
                verified[peer] = nil
                challenge(peer, now: clock.now())
            }
            return
        }
        verified[peer] = freshness
        switch envelope.body {
        case .message(let id, let message):
            socket.send(encode(.ack(id: id)), to: peer)
            guard delivered[peer, default: []].insert(id).inserted else { return }
            if delivered[peer]!.count > 4096 { delivered[peer]!.remove(delivered[peer]!.min()!) }
            continuation?.yield(message)
        case .ack(let id):
            if pending[id]?.peer == peer { pending[id] = nil }
        case .clockRequest(let t1):
            let t2 = received
            socket.send(encode(.clockReply(t1: t1, t2: t2, t3: clock.now().seconds)), to: peer)
        case .clockReply(let t1, let t2, let t3):
            // Only the answer to a request we sent this peer lately, and only once.
            guard let index = clockRequests[peer]?.firstIndex(of: t1), received - t1 < Self.clockReplyWindow.seconds else {
                refused += 1
                return
            }
            clockRequests[peer]?.remove(at: index)
            estimators[peer, default: DriftTrackingEstimator()].add(ClockSample(t1: t1, t2: t2, t3: t3, t4: received))
        case .challenge, .response:
            break
        }
    }
}

/// A verified peer's instance and which of its sequence numbers were seen: a sequence number
/// seen before, or older than the last 64, is a replay.
struct ReplayWindow: Sendable, Equatable {
    var instance: UInt64
    var highest: UInt64
    /// Bit n: `highest - n` was seen.
    var window: UInt64 = 1

    init(instance: UInt64, highest: UInt64) {
        self.instance = instance
        self.highest = highest
    }

    /// Whether `sequence` is new, recording it if so.
    mutating func accept(_ sequence: UInt64) -> Bool {
        if sequence > highest {
            let shift = sequence - highest
            window = shift >= 64 ? 1 : (window << shift) | 1
            highest = sequence
            return true
        }
        let age = highest - sequence
        guard age < 64, window & (1 << age) == 0 else { return false }
        window |= 1 << age
        return true
    }
}
