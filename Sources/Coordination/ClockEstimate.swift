

/// What an estimator says about a peer's clock.
public struct ClockEstimate: Sendable, Hashable {
    /// Peer clock minus local clock at ``localTime``, seconds.
    public var offset: Double
    /// Rate difference: how many seconds the offset grows per local second (1e-6 = 1 ppm).
    public var drift: Double
    /// The local time the estimate refers to.
    public var localTime: Double
    /// A bound on the offset error, seconds (half the best round trip plus the fit's spread).
    public var errorBound: Double

    /// The offset extrapolated to another local time.
    public func offset(at time: Double) -> Double { offset + drift * (time - localTime) }
}
