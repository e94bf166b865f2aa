

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
