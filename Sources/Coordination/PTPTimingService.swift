public import MediaClock
public import PTP
import Synchronization
public import Transport

/// The box's PTP master as a service the routes share: made when the first receiver is to
/// be served, each receiver served while any route asks for it (counted), and closed — its
/// ports 319/320 freed — when the last stops. An idle daemon holds no PTP socket and no timer.
public final class PTPTimingService: Sendable {
    /// The master's identity, the same for every master this service makes (the receivers'
    /// sync packets name it).
    public let identity: PTPPortIdentity
    private let clock: any HostClock
    private let configuration: PTPMaster.Configuration
    private let state = Mutex<(master: PTPMaster?, counts: [String: Int])>((nil, [:]))

    /// - Parameter identity: the clock's identity; by default a random one (locally
    ///   administered, so it names no one's hardware).
    public init(clock: any HostClock, configuration: PTPMaster.Configuration = PTPMaster.Configuration(), identity: PTPPortIdentity? = nil) {
        self.clock = clock
        self.configuration = configuration
        var random = (0..<6).map { _ in UInt8.random(in: .min ... .max) }
        random[0] = random[0] & 0xFC | 0x02
        self.identity = identity ?? PTPPortIdentity(hardwareAddress: random)
    }

    public var clockIdentity: UInt64 { identity.clock }

    /// The master's time: its clock's.
    public func now() -> Duration { clock.now() }

    /// Serves `host` from now on; throws when the master's ports cannot be bound.
    public func follow(_ host: String) throws(TransportError) {
        try state.withLock { (state: inout (master: PTPMaster?, counts: [String: Int])) throws(TransportError) in
            if state.master == nil {
                state.master = try PTPMaster(identity: identity, clock: clock, configuration: configuration)
            }
            state.counts[host, default: 0] += 1
            state.master?.setFollowers(Array(state.counts.keys))
        }
    }

    /// Stops serving `host` for one caller; the master closes with its last follower.
    public func stopFollowing(_ host: String) {
        let closing = state.withLock { state -> PTPMaster? in
            guard let count = state.counts[host] else { return nil }
            state.counts[host] = count > 1 ? count - 1 : nil
            guard state.counts.isEmpty else {
                state.master?.setFollowers(Array(state.counts.keys))
                return nil
            }
            defer { state.master = nil }
            return state.master
        }
        closing?.close()
    }

    /// The clock `host`'s stream is timed by and the time on it: ours, or the receiver's own
    /// where it announced itself grandmaster (``PTPMaster/reading(for:)``).
    public func reading(for host: String) -> (clockIdentity: UInt64, time: Duration) {
        state.withLock { $0.master }?.reading(for: host) ?? (identity.clock, clock.now())
    }

    /// Whether `host` measures its path's delay itself (``PTPMaster/measuresPathDelay(_:)``).
    public func measuresPathDelay(_ host: String) -> Bool {
        state.withLock { $0.master }?.measuresPathDelay(host) ?? false
    }

    /// Waits, at most `limit`, while `host` announced itself grandmaster and its clock is not
    /// measured both ways yet; returns at once otherwise.
    public func settle(_ host: String, limit: Duration) async {
        let deadline = clock.now() + limit
        while state.withLock({ $0.master })?.isSettling(host) == true, clock.now() < deadline {
            guard (try? await clock.sleep(for: .milliseconds(20))) != nil else { return }
        }
    }

    /// The receivers served now.
    public var followers: [String] { state.withLock { $0.counts.keys.sorted() } }
    /// What the master sent so far (nil when it is closed).
    public var statistics: PTPMaster.Statistics? { state.withLock { $0.master?.statistics } }
}
