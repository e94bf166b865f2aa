/// One request/response exchange with a peer's clock (NTP-style four timestamps).
///
/// `t1` and `t4` are read on the local monotonic clock when the request left and
/// the reply arrived; `t2` and `t3` on the peer's clock when it received the
/// request and sent the reply. All in seconds.
public struct ClockSample: Sendable, Hashable {
    public var t1: Double
    public var t2: Double
    public var t3: Double
    public var t4: Double

    public init(t1: Double, t2: Double, t3: Double, t4: Double) {
        self.t1 = t1
        self.t2 = t2
        self.t3 = t3
        self.t4 = t4
    }

    /// Peer clock minus local clock, assuming symmetric paths.
    public var offset: Double { ((t2 - t1) + (t3 - t4)) / 2 }
    /// Time on the wire both ways (the peer's processing time excluded).
    public var roundTrip: Double { (t4 - t1) - (t3 - t2) }
    /// The local time the sample stands for (the middle of the exchange).
    public var localTime: Double { (t1 + t4) / 2 }
}

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

/// Estimates a peer's clock from samples.
public protocol ClockEstimator: Sendable {
    mutating func add(_ sample: ClockSample)
    /// The estimate at local time `time`, or nil before the first sample.
    func estimate(at time: Double) -> ClockEstimate?
}
