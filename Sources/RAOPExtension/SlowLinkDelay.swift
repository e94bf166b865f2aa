#if canImport(Glibc)
import Glibc
#endif
import MediaClock

/// How late a receiver that follows our PTP master reads our clock: nqptp measures no path
/// delay, so it takes our clock to be the one-way delay behind, and plays that much late. On a
/// slow link — the least round trip the kernel measured on the RTSP connection is
/// ``slowRoundTrip`` or more — that delay is taken off its times; on a LAN (well under 2 ms)
/// nothing.
///
/// The delay has two parts:
/// - **the link's least one-way delay**: half the least round trip the kernel measured
///   (``Transport/ByteStream/leastRoundTrip()``, TCP's minimum RTT). The receiver's network
///   stack answers those, so the time its application takes to answer a request is not in it.
///   Timing RTSP requests instead took that time for the link: under load a receiver that
///   answered in 2 ms was taken to be 1 ms away, and played 1 ms early beside an AirPlay 1
///   receiver (CI of 574dd57).
/// - **where the follower's filter settles in the link's jitter** (``followerSettling(excess:)``):
///   nqptp does not take each Follow_Up's delay as it comes; it moves its offset a sixteenth
///   of the way towards a Follow_Up that came sooner than it expected and a 256th towards one
///   that came later (1.2.4, `handle_follow_up`), so on a jittery link it settles a little
///   above the least delay — about 0.9 ms into 0–5 ms of uniform jitter, where it played that
///   much late. The jitter towards the receiver is one way's share, deconvolved
///   (``oneWayDistribution(roundTripExcess:)``), of the spread of each `/feedback`'s round trip
///   as the kernel measured it (``RTSPClient/timedSend(_:timeout:)``): a link's two ways are
///   taken to be alike, as for the least delay. Only the spread is used, not the level.
///   Timing the requests in the application instead counted this box's scheduling and the
///   receiver's answer, which it may write in several segments (the last one's delay).
///
/// A link slower one way than the other is beyond any sender that the receiver does not
/// answer with its own times (`[audio] group-offsets`).
struct SlowLinkDelay: Sendable {
    static let slowRoundTrip: Duration = .milliseconds(2)
    /// Round trips the spread is taken from: the first half minute's (``RAOPStream``'s quick
    /// `/feedback`), then five minutes of `/feedback` on a slow link. The estimate from 240
    /// wandered ±0.1 ms (one standard deviation) from run to run in the benchmark and in
    /// simulation of its jitter; from 600, ±0.05 ms.
    static let roundTripsKept = 600
    /// Round trips the least is taken from: ten minutes on.
    static let roundTripsForTheLeast = 1_200

    /// The least round trip the kernel measured on the connection (nil: not known).
    var leastRoundTrip: Duration?
    /// The newest round trips measured, at most ``roundTripsForTheLeast``, oldest first.
    private var measured: [Duration] = []

    init(leastRoundTrip: Duration? = nil) { self.leastRoundTrip = leastRoundTrip }

    /// The newest ``roundTripsKept`` round trips, oldest first.
    var roundTrips: ArraySlice<Duration> { measured.suffix(Self.roundTripsKept) }

    /// The least of the round trips kept for it (nil: none yet).
    var leastOfRequests: Duration? { measured.min() }

    /// Notes a request's round trip; the oldest beyond ``roundTripsForTheLeast`` is dropped.
    mutating func record(roundTrip: Duration) {
        guard roundTrip >= .zero else { return }
        if measured.count == Self.roundTripsForTheLeast { measured.removeFirst() }
        measured.append(roundTrip)
    }

    /// Whether the link is slow enough for the delay to count (``slowRoundTrip``).
    var isSlow: Bool { (leastRoundTrip ?? .zero) >= Self.slowRoundTrip }

    /// What to take off the receiver's times: nothing on a LAN or when the kernel's least round
    /// trip is unknown; else half of it plus, from ``minimumSpreadSamples`` round trips on,
    /// where the follower settles on one way's share of the newest ``roundTripsKept``' spread
    /// above the least of ``roundTripsForTheLeast`` (``oneWayDistribution(roundTripExcess:)``).
    /// The spread is taken
    /// above the requests' own least, not the kernel's (which counts the handshake), so that
    /// the time a receiver takes to answer each request is not taken for jitter; and above
    /// the least of more round trips than it has, since the least of fewer moved each
    /// time one left, and the whole estimate with it (±0.25 ms in the benchmark).
    ///
    /// `followingFor` is how long the receiver has followed our clock: a follower that has just
    /// started is not settled yet (``followerSettling(delays:weights:after:)``); nil: settled.
    func oneWay(followingFor: Duration? = nil) -> Duration {
        guard let leastRoundTrip, isSlow else { return .zero }
        guard measured.count >= Self.minimumSpreadSamples, let least = measured.min() else { return min(Self.maximumOneWay, leastRoundTrip / 2) }
        let oneWay = Self.oneWayDistribution(roundTripExcess: roundTrips.map { $0 - least })
        return min(Self.maximumOneWay, leastRoundTrip / 2 + Self.followerSettling(delays: oneWay.delays, weights: oneWay.weights, after: followingFor))
    }

    /// ``oneWay(followingFor:)`` for a settled follower.
    var oneWay: Duration { oneWay() }

    /// The most taken off: a receiver that holds its answers (and so the kernel's round trips)
    /// moves only its own times, and no further than a link a box could play over.
    static let maximumOneWay: Duration = .milliseconds(250)

    /// Fewer round trips than this say too little of the spread: half the least round trip alone.
    static let minimumSpreadSamples = 16
    /// Round trips measured in quick succession at the start (``RAOPStream/quickFeedbackInterval``).
    static let quickRoundTrips = roundTripsKept

    /// What to take off the times for a least round trip of `leastRoundTrip` alone (nil: unknown, nothing).
    static func oneWay(leastRoundTrip: Duration?) -> Duration {
        SlowLinkDelay(leastRoundTrip: leastRoundTrip).oneWay
    }

    /// nqptp's rise and fall: an offset from a Follow_Up that came sooner than expected is
    /// taken at a sixteenth, one that came later at a 256th, and at most this much of it.
    static let followerRise = 16.0, followerFall = 256.0
    static let followerFallLimit: Duration = .microseconds(2_500)

    /// Where a follower with nqptp's filter settles above the least one-way delay, given
    /// delays above it that are spread like `excess`: the `y` at which the pulls balance, a
    /// sixteenth of what lies below `y` against a 256th of what lies above it (each at most
    /// ``followerFallLimit``).
    static func followerSettling(excess: [Duration]) -> Duration {
        followerSettling(delays: excess.map(\.seconds), weights: Array(repeating: 1, count: excess.count))
    }

    /// ``followerSettling(excess:)`` for delays (seconds) of the given weights; found by
    /// halving the interval from zero to the largest delay.
    static func followerSettling(delays: [Double], weights: [Double]) -> Duration {
        guard let highest = delays.max(), highest > 0 else { return .zero }
        var (low, high) = (0.0, highest)
        for _ in 0..<40 {
            let y = (low + high) / 2
            let (rise, fall) = pulls(at: y, delays: delays, weights: weights)
            if rise / followerRise > fall / followerFall { high = y } else { low = y }
        }
        return .seconds(double: (low + high) / 2)
    }

    /// What the delays pull a follower at `y` by, before its sixteenth and 256th: down by all
    /// that lies below `y`, up by what lies above it (each at most ``followerFallLimit``).
    private static func pulls(at y: Double, delays: [Double], weights: [Double]) -> (rise: Double, fall: Double) {
        let limit = followerFallLimit.seconds
        var rise = 0.0, fall = 0.0
        for (x, weight) in zip(delays, weights) {
            if x < y { rise += weight * (y - x) } else { fall += weight * min(x - y, limit) }
        }
        return (rise, fall)
    }

    /// How often our master sends a Sync and Follow_Up (Coordination's `PTPMaster` with its
    /// defaults). Sending a follower on a slow link 64 a second was tried and is not done:
    /// Docs/airplay.md, "Syncs 64 a second: tried".
    static let followUpInterval: Duration = .milliseconds(125)

    /// How many Follow_Ups a follower has had `elapsed` after our master began serving it.
    static func followUps(after elapsed: Duration) -> Int { Int(max(.zero, elapsed) / followUpInterval) }

    /// Where a follower with nqptp's filter is `elapsed` after it started following our clock,
    /// on average: in its first second it takes every Follow_Up that came sooner in full and
    /// none that came later, so it starts at about the soonest of that second's eight; then it rises into the jitter at
    /// most 2.5 ms / 256 a Follow_Up until it settles (``followerSettling(delays:weights:)``).
    /// Taking the settled point from the start played a receiver 0.5–0.7 ms early for its
    /// first ten seconds in the benchmark. The rise is
    /// followed on the expected pulls of each Follow_Up; nil or a minute on: settled.
    static func followerSettling(delays: [Double], weights: [Double], after elapsed: Duration?) -> Duration {
        let settled = followerSettling(delays: delays, weights: weights)
        guard let elapsed, elapsed < .seconds(60) else { return settled }
        let total = weights.reduce(0, +)
        guard total > 0 else { return settled }
        // The soonest of the first second's n: E[min] = Σ P(min > x) over the grid's cells,
        // each P(min > x) = P(one > x)ⁿ.
        let firstSecond = max(1, followUps(after: .seconds(1)))
        var above = 1.0, start = 0.0
        for index in delays.indices.dropLast() {
            above -= weights[index] / total
            start += pow(max(0, above), Double(firstSecond)) * (delays[index + 1] - delays[index])
        }
        var y = start
        for _ in 0..<max(0, followUps(after: elapsed) - firstSecond) {
            // Within a microsecond of where it settles is there (it nears it ever more slowly).
            guard y < settled.seconds - 1e-6 else { return settled }
            let (rise, fall) = pulls(at: y, delays: delays, weights: weights)
            y += (fall / followerFall - rise / followerRise) / total
        }
        return min(settled, .seconds(double: y))
    }

    /// The grid ``oneWayDistribution(roundTripExcess:)`` works on, and how far it reaches: a
    /// round trip further above the least counts as that far (the follower counts at most
    /// 2.5 ms of a late Follow_Up anyway), so the work per estimate is bounded.
    static let distributionStep: Duration = .microseconds(250)
    static let distributionSteps = 200
    static let distributionIterations = 40

    /// One way's delay above the least, from round trips `roundTripExcess` above the least
    /// that are each made of two such ways, alike and independent: a distribution `f` on a
    /// grid whose convolution with itself fits the round trips best, by expectation and
    /// maximisation (each round trip's split into its two ways weighed by `f`, then `f` made
    /// the average of those splits), from an even start. Halving the round trips instead
    /// takes the spread of a sum for the spread of one way — narrower, so the follower seemed
    /// to settle 0.45 ms further into 0–5 ms of jitter each way than it did.
    static func oneWayDistribution(roundTripExcess: [Duration]) -> (delays: [Double], weights: [Double]) {
        let step = distributionStep.seconds
        let cells = roundTripExcess.map { min(distributionSteps, max(0, Int(($0.seconds / step).rounded()))) }
        guard let widest = cells.max(), widest > 0 else { return ([0], [1]) }
        var f = Array(repeating: 1 / Double(widest + 1), count: widest + 1)
        var split = Array(repeating: 0.0, count: widest + 1)
        for _ in 0..<distributionIterations {
            var next = Array(repeating: 0.0, count: widest + 1)
            for cell in cells {
                var total = 0.0
                for first in 0...cell {
                    split[first] = f[first] * f[cell - first]
                    total += split[first]
                }
                guard total > 0 else { continue }
                for first in 0...cell { next[first] += split[first] / total }
            }
            let sum = next.reduce(0, +)
            guard sum > 0 else { break }
            f = next.map { $0 / sum }
        }
        return ((0...widest).map { Double($0) * step }, f)
    }
}
