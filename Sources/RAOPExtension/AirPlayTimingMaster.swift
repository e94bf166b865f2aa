/// The PTP master AirPlay 2 streams are timed by: one per daemon (UDP 319/320 are the
/// host's), shared by every route, serving the receivers of the routes that play.
///
/// The daemon supplies it (Coordination's `PTPMaster`, created when the first AirPlay 2 stream
/// starts); tests supply one on other ports. A protocol at this seam keeps the extension free
/// of the clock exchange's sockets and lets a box maker's build leave PTP out.
public protocol AirPlayTimingMaster: Sendable {
    /// The master's clock identity (IEEE 1588), which the receivers' sync packets name.
    var clockIdentity: UInt64 { get }
    /// The master's time now: the timeline its Sync messages carry.
    func now() -> Duration
    /// Starts serving `host` (an IPv4 address) until as many ``stopFollowing(_:)`` calls come;
    /// throws when the master cannot run (its ports taken, no permission to bind them).
    func follow(_ host: String) async throws
    func stopFollowing(_ host: String) async
    /// The clock `host`'s stream is timed by and the time on it now: the master's own, or —
    /// where `host` itself announced a better clock (a receiver that insists on being
    /// grandmaster) — that clock as this box follows it.
    func reading(for host: String) -> AirPlayClockReading
    /// Waits (at most `limit`) until the clock `host` is timed by is known: at once unless
    /// `host` announced itself grandmaster and the box does not follow its clock yet.
    func settle(_ host: String, limit: Duration) async
    /// Whether `host`, following the master, measures its path's delay itself (it sends
    /// Delay_Req, as IEEE 1588 followers do): its stream then needs no allowance for a slow
    /// link (``SlowLinkDelay``), which is for followers that do not (nqptp).
    func measuresPathDelay(_ host: String) -> Bool
}

extension AirPlayTimingMaster {
    /// The master's own clock, for masters that never follow a receiver's.
    public func reading(for host: String) -> AirPlayClockReading {
        AirPlayClockReading(clockIdentity: clockIdentity, time: now())
    }

    public func settle(_ host: String, limit: Duration) async {}

    public func measuresPathDelay(_ host: String) -> Bool { false }
}
