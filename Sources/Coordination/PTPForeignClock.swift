import PTP

/// A receiver that announced a better clock than the box's (what HomePodOS 27 is reported to
/// do), followed as a PTP slave follows its master: its Sync/Follow_Up give its time less the
/// path's delay, our Delay_Req/Delay_Resp its time plus it; the least delayed of the last 16
/// of each way, averaged, is its offset from ours (the path taken as symmetric). Only the
/// receiver a route plays to is followed this way, from its own address and PTP ports.
///
/// A LAN host can forge that address, or replay what it sent before, so one message moves
/// little: a first half waits at most ``pendingLifetime`` for its second (a replayed Follow_Up
/// finds no Sync), and each way's least delayed sample is taken only among those within
/// ``plausibleSpread`` of that way's median (a forged time far off is left out; to move the
/// offset by more, a forger must outnumber the receiver's own messages).
struct PTPForeignClock: Sendable {
    /// The most Syncs and Delay_Reqs waiting for their second half, and samples kept each way.
    static let pendingLimit = 8
    static let samplesKept = 16
    /// How long a Sync waits for its Follow_Up, a Delay_Req for its Delay_Resp: a second (IEEE
    /// 1588 sends the second half at once; a grandmaster sends eight or fewer a second).
    static let pendingLifetime: Duration = .seconds(1)
    /// How far above or below its way's median a sample may be and still count: the spread of a
    /// path's delay a box plays in sync over (10 ms), not a forged time's.
    static let plausibleSpread: Int64 = 10_000_000
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
        guard let down = Self.plausible(downward).max() else { return nil }
        guard let up = Self.plausible(upward).min() else { return down }
        // Halves first: wire values are arbitrary and the sum must not overflow.
        return (down >> 1) &+ (up >> 1)
    }

    /// Whether the offset is measured both ways.
    var isSettled: Bool { !downward.isEmpty && !upward.isEmpty }

    mutating func syncArrived(_ sequence: UInt16, at arrival: Duration) {
        Self.remember(arrival, for: sequence, in: &syncArrivals)
    }

    /// Takes a Follow_Up arriving at `now` with its Sync's (`sequence`) time; one whose Sync came
    /// more than ``pendingLifetime`` ago, or never, is dropped.
    mutating func followUp(_ sequence: UInt16, preciseOrigin: PTPTimestamp, now: Duration) {
        guard let arrival = syncArrivals.removeValue(forKey: sequence), now - arrival <= Self.pendingLifetime, preciseOrigin.isValid else { return }
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

    /// Takes a Delay_Resp arriving at `now`; one for a Delay_Req sent more than
    /// ``pendingLifetime`` ago, or never, is dropped.
    mutating func delayResponse(_ sequence: UInt16, received: PTPTimestamp, now: Duration) {
        guard let sent = delayRequests.removeValue(forKey: sequence), now - sent <= Self.pendingLifetime, received.isValid else { return }
        Self.keep(received.totalNanoseconds &- Self.nanoseconds(sent), in: &upward)
    }

    /// The samples within ``plausibleSpread`` of their median (the lower middle one of an even count).
    static func plausible(_ samples: [Int64]) -> [Int64] {
        guard samples.count > 2 else { return samples }
        let median = samples.sorted()[(samples.count - 1) / 2]
        // Distances by subtraction that reports overflow: forged values may be anywhere in Int64.
        return samples.filter { sample in
            let (distance, overflow) = sample.subtractingReportingOverflow(median)
            return !overflow && distance.magnitude <= UInt64(plausibleSpread)
        }
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
