#if canImport(Glibc)
import Glibc
#endif
public import MediaClock

/// A participant's own host clock: a base clock with an offset and a rate error,
/// for simulating boxes whose clocks disagree.
public struct SkewedHostClock: HostClock {
    public let base: any HostClock
    public let offset: Duration
    /// 100e-6: this clock runs 100 ppm fast.
    public let skew: Double

    public init(base: any HostClock, offset: Duration, skew: Double) {
        self.base = base
        self.offset = offset
        self.skew = skew
    }

    public func now() -> Duration {
        .seconds(double: base.now().seconds * (1 + skew)) + offset
    }

    public func sleep(until deadline: Duration) async throws {
        // Invert now(): the base time at which this clock reads `deadline`.
        try await base.sleep(until: .seconds(double: (deadline - offset).seconds / (1 + skew)))
    }
}
