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
}
