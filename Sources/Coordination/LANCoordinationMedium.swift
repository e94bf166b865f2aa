#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import IPNetwork
import MediaClock

/// Coordination between boxes on a LAN, over UDP: clock samples as plain
/// request/reply datagrams (a lost one is simply skipped), commands on a
/// reliable channel (acknowledged, retransmitted, delivered once). Peers are
/// configured (or found: `_mediaroute._udp`); each box runs one medium for its one
/// participant. With a ``HouseholdKey`` every datagram carries its HMAC and what
/// does not is dropped unread (a replayed command is one the coordinators have seen:
/// they ignore what is not newer than the newest from its originator).
public actor LANCoordinationMedium: CoordinationMedium {
    private enum Datagram: Codable {
        case message(id: UInt64, CoordinationMessage)
        case ack(id: UInt64)
        case clockRequest(t1: Double)
        case clockReply(t1: Double, t2: Double, t3: Double)
    }

    private struct Pending {
        let bytes: [UInt8]
        let peer: UDPAddress
        var attempts: Int
    }

    private let socket: UDPSocket
    /// Always the system clock: arrival times are stamped by the socket's reader thread on it.
    private let clock = SystemHostClock()
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

    /// The address other boxes reach this one at.
    public nonisolated var localAddress: UDPAddress { socket.localAddress }

    public init(
        binding address: UDPAddress, peers: [UDPAddress],
        retransmitInterval: Duration = .milliseconds(50), maximumAttempts: Int = 40, clockInterval: Duration = .seconds(1),
        key: HouseholdKey? = nil
    ) throws {
        self.key = key
        socket = try UDPSocket(binding: address)
        self.peers = peers
        self.retransmitInterval = retransmitInterval
        self.maximumAttempts = maximumAttempts
        self.clockInterval = clockInterval
    }

    public func setPeers(_ peers: [UDPAddress]) {
        self.peers = peers
        wake?.yield()
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
            let bytes = encode(.message(id: nextID, message))
            pending[nextID] = Pending(bytes: bytes, peer: peer, attempts: 1)
            transmit(bytes, to: peer)
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

    private func encode(_ datagram: Datagram) -> [UInt8] {
        let bytes = (try? Array(JSONEncoder().encode(datagram))) ?? []
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
            socket.send(entry.bytes, to: entry.peer)
        }
    }

    private func requestClockSamples() {
        let t1 = clock.now().seconds
        for peer in peers { socket.send(encode(.clockRequest(t1: t1)), to: peer) }
    }

    private func handle(_ bytes: [UInt8], from peer: UDPAddress, receivedAt received: Double) {
        // Datagrams are bounded by the socket's buffer; anything malformed is dropped.
        guard bytes.count <= 16_384 else { return }
        var bytes = bytes
        if let key {
            guard let opened = key.open(bytes) else {
                unauthenticated += 1
                return
            }
            bytes = opened
        }
        guard let datagram = try? JSONDecoder().decode(Datagram.self, from: Data(bytes)) else { return }
        switch datagram {
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
            estimators[peer, default: DriftTrackingEstimator()].add(ClockSample(t1: t1, t2: t2, t3: t3, t4: received))
        }
    }
}
