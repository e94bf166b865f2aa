import PTP

/// A receiver that announced a better clock than the box's (what HomePodOS 27 is reported to
/// do), followed as a PTP slave follows its master: its Sync/Follow_Up give its time less the
/// path's delay, our Delay_Req/Delay_Resp its time plus it; the least delayed of the last 16
/// of each way, averaged, is its offset from ours (the path taken as symmetric). Only the
/// receiver a route plays to is followed this way, from its own address and PTP ports.
struct PTPForeignClock: Sendable {
    /// The most Syncs and Delay_Reqs waiting for their second half, and samples kept each way.
    static let pendingLimit = 8
    static let samplesKept = 16
    /// A grandmaster silent this long is no longer followed: the box serves the receiver again.
    static let silenceLimit: Duration = .seconds(5)

    var announce: PTPAnnounce
    var source: PTPPortIdentity
    var lastAnnounce: Duration
    /// Our arrival time of each Sync, by sequence, until its Follow_Up.
    var syncArrivals: [UInt16: Duration] = [:]
    /// Our sending time of each Delay_Req, by sequence, until its Delay_Resp.
    var delayRequests: [UInt16: Duration] = [:]
    /// Its time less ours at each Sync (offset − delay) and at each Delay_Req (offset + delay), in ns.
    var downward: [Int64] = []
    var upward: [Int64] = []

    /// Its time less ours, in ns: nil until a Sync and its Follow_Up came. Without a Delay_Resp
    /// yet, the Sync's side alone (short by the path's delay, well under a millisecond on a LAN).
    var offset: Int64? {
        guard let down = downward.max() else { return nil }
        guard let up = upward.min() else { return down }
        // Halves first: wire values are arbitrary and the sum must not overflow.
        return (down >> 1) &+ (up >> 1)
    }

    /// Whether the offset is measured both ways.
    var isSettled: Bool { !downward.isEmpty && !upward.isEmpty }

    mutating func syncArrived(_ sequence: UInt16, at arrival: Duration) {
        Self.remember(arrival, for: sequence, in: &syncArrivals)
    }

    mutating func followUp(_ sequence: UInt16, preciseOrigin: PTPTimestamp) {
        guard let arrival = syncArrivals.removeValue(forKey: sequence), preciseOrigin.isValid else { return }
        Self.keep(preciseOrigin.totalNanoseconds &- Self.nanoseconds(arrival), in: &downward)
    }

    mutating func delayRequestSent(_ sequence: UInt16, at time: Duration) {
        Self.remember(time, for: sequence, in: &delayRequests)
    }

    /// Keeps a first half's time until its second half; a flood of first halves that never get
    /// one is cut at ``pendingLimit`` (all dropped: the next exchange starts clean).
    private static func remember(_ time: Duration, for sequence: UInt16, in pending: inout [UInt16: Duration]) {
        if pending.count >= pendingLimit { pending.removeAll() }
        pending[sequence] = time
    }

    mutating func delayResponse(_ sequence: UInt16, received: PTPTimestamp) {
        guard let sent = delayRequests.removeValue(forKey: sequence), received.isValid else { return }
        Self.keep(received.totalNanoseconds &- Self.nanoseconds(sent), in: &upward)
    }

    private static func keep(_ sample: Int64, in samples: inout [Int64]) {
        samples.append(sample)
        if samples.count > samplesKept { samples.removeFirst(samples.count - samplesKept) }
    }

    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds.multipliedReportingOverflow(by: 1_000_000_000).partialValue &+ attoseconds / 1_000_000_000
    }

    /// The best-master comparison of IEEE 1588 (9.3.4) on what an Announce says: priority 1,
    /// class, accuracy, variance, priority 2, then identity; lower is better.
    static func isBetter(_ candidate: PTPAnnounce, than current: PTPAnnounce) -> Bool {
        (candidate.priority1, candidate.clockClass, candidate.clockAccuracy, candidate.variance, candidate.priority2, candidate.grandmaster)
            < (current.priority1, current.clockClass, current.clockAccuracy, current.variance, current.priority2, current.grandmaster)
    }
}
