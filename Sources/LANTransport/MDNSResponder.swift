#if canImport(Glibc)
import Glibc
#endif
public import Logging
public import MediaClock
import NIOCore
import Transport

/// RFC 6762 §6: a record is multicast on an interface at most once a second, however many
/// questions ask for it, so a stream of queries (spoofed or not) cannot make the box an
/// amplifier on the link: what it sends is bounded by time, not by what it is asked.
struct MulticastAnswerThrottle: Sendable {
    let interval: Duration
    private var last: [String: Duration] = [:]
    /// Answers held back (for tests and the log).
    private(set) var suppressed = 0

    init(interval: Duration = .seconds(1)) {
        self.interval = interval
    }

    /// Whether an answer may be multicast on `interface` at `now`; if so, it counts as sent.
    mutating func mayMulticast(on interface: String, now: Duration) -> Bool {
        if let previous = last[interface], now - previous < interval {
            suppressed += 1
            return false
        }
        last[interface] = now
        return true
    }
}

extension String {
    func replacingDots() -> String { String(map { $0 == "." ? "-" : $0 }) }
}

/// Answers mDNS questions for one service this box offers, on each multicast interface
/// (or those named), announcing it when it starts and saying goodbye when it stops. The
/// address in its answers is the address of the interface the question came in on.
public actor MDNSResponder {
    static let group = "224.0.0.251"

    private let advertisement: MDNSServiceAdvertisement
    private let interfaceNames: [String]?
    private let logger: Logger
    private let sockets = MulticastSockets(maximumDatagram: 9000)
    private var listener: (any Channel)?
    private var senders: MulticastSockets.Senders = [:]
    private var reader: Task<Void, Never>?
    private var announcer: Task<Void, Never>?
    private var stopped = false
    private let clock: any HostClock
    private var throttle = MulticastAnswerThrottle()
    /// Answers sent (for tests).
    public private(set) var answersSent = 0
    /// Questions not answered because the records went out less than a second before (for tests).
    public var answersSuppressed: Int { throttle.suppressed }

    public init(
        advertising advertisement: MDNSServiceAdvertisement, interfaces: [String]? = nil, clock: any HostClock = SystemHostClock(),
        logger: Logger = Logger(label: "mediaroute.mdns")
    ) {
        self.clock = clock
        self.advertisement = advertisement
        self.interfaceNames = interfaces
        self.logger = logger
    }

    /// Listens on port 5353 and announces the service twice, a second apart (RFC 6762 §8.3).
    public func start() async throws {
        let stream = sockets.datagrams
        reader = Task { [weak self] in
            for await datagram in stream {
                guard let self else { return }
                await self.handle(datagram)
            }
        }
        listener = try await sockets.bind(host: "0.0.0.0", port: 5353, sendingOn: nil, ttl: 255, reusePort: true)
        await refresh()
        announcer = Task { [weak self, clock] in
            try? await clock.sleep(for: .seconds(1))
            await self?.announce(ttl: 120)
        }
    }

    /// Follows the interfaces: joins the group on new ones and announces there.
    public func refresh() async {
        guard !stopped, let listener else { return }
        let (current, joined) = await sockets.follow(
            interfaces: interfaceNames, senders: senders, listener: listener, group: Self.group, port: 5353, logger: logger)
        senders = current
        for interface in joined {
            guard let channel = senders[interface.name]?.channel else { continue }
            sockets.send(advertisement.announcement(address: interface.address).encoded(), on: channel, to: Self.group, port: 5353)
        }
    }

    /// Says goodbye (every record with TTL 0) and closes.
    public func stop() async {
        guard !stopped else { return }
        announce(ttl: 0)
        stopped = true
        announcer?.cancel()
        reader?.cancel()
        sockets.finish()
        for sender in senders.values { try? await sender.channel.close() }
        senders = [:]
        try? await listener?.close()
    }

    private func announce(ttl: UInt32) {
        guard !stopped else { return }
        for sender in senders.values {
            sockets.send(advertisement.announcement(address: sender.interface.address, ttl: ttl).encoded(), on: sender.channel, to: Self.group, port: 5353)
        }
    }

    private func handle(_ datagram: Datagram) {
        guard !stopped, let query = try? DNSMessage.decode(datagram.bytes), !query.isResponse else { return }
        // Answered on the interface the question came from, with that interface's address.
        guard let sender = senders.values.first(where: { $0.interface.contains(datagram.host) }),
            let answer = advertisement.answer(to: query, address: sender.interface.address),
            throttle.mayMulticast(on: sender.interface.name, now: clock.now())
        else { return }
        sockets.send(answer.encoded(), on: sender.channel, to: Self.group, port: 5353)
        answersSent += 1
    }
}
