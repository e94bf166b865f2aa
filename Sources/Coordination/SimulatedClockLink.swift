#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A simulated network path between a local clock and a peer's clock, for
/// deterministic tests and benchmarks: one-way delay, jitter, asymmetry, loss,
/// and the peer's clock offset and skew. Random numbers come from a seeded
/// generator, so every run is the same.
public struct SimulatedClockLink: Sendable {
    /// Base one-way delay, seconds.
    public var delay: Double
    /// Mean of the exponentially distributed extra delay per direction, seconds.
    public var jitterMean: Double
    /// Multipliers of the request and reply paths (1.5 and 0.5: the request path is three times slower).
    public var requestFactor: Double
    public var replyFactor: Double
    /// Fraction of exchanges lost, 0...1.
    public var loss: Double
    /// Peer clock = (1 + skew) × true time + offset.
    public var offset: Double
    public var skew: Double
    private var random: SplitMix64

    public init(
        delay: Double = 0.0003, jitterMean: Double = 0.0002, requestFactor: Double = 1, replyFactor: Double = 1,
        loss: Double = 0, offset: Double = 0, skew: Double = 0, seed: UInt64 = 1
    ) {
        self.delay = delay
        self.jitterMean = jitterMean
        self.requestFactor = requestFactor
        self.replyFactor = replyFactor
        self.loss = loss
        self.offset = offset
        self.skew = skew
        self.random = SplitMix64(seed: seed)
    }

    /// The peer's clock reading at true time `time`.
    public func peerClock(at time: Double) -> Double { (1 + skew) * time + offset }

    /// The true offset (peer minus local) at true time `time`; the local clock is true time.
    public func trueOffset(at time: Double) -> Double { peerClock(at: time) - time }

    /// An exchange started at true time `time`, or nil when lost.
    public mutating func exchange(at time: Double, processing: Double = 0.00002) -> ClockSample? {
        if loss > 0, random.nextDouble() < loss { return nil }
        let forward = (delay + exponential()) * requestFactor
        let back = (delay + exponential()) * replyFactor
        let t1 = time
        let arrival = time + forward
        let departure = arrival + processing
        let t4 = departure + back
        return ClockSample(t1: t1, t2: peerClock(at: arrival), t3: peerClock(at: departure), t4: t4)
    }

    private mutating func exponential() -> Double {
        guard jitterMean > 0 else { return 0 }
        return -jitterMean * log(1 - random.nextDouble())
    }
}
