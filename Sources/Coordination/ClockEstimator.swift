

/// Estimates a peer's clock from samples.
public protocol ClockEstimator: Sendable {
    mutating func add(_ sample: ClockSample)
    /// The estimate at local time `time`, or nil before the first sample.
    func estimate(at time: Double) -> ClockEstimate?
}
