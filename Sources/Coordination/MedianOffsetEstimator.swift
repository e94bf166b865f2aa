

/// Snapcast's estimator, for comparison: the median offset of the last `count` samples.
public struct MedianOffsetEstimator: ClockEstimator {
    public var count: Int
    private var offsets: [Double] = []
    private var roundTrips: [Double] = []

    public init(count: Int = 200) {
        self.count = count
    }

    public mutating func add(_ sample: ClockSample) {
        offsets.append(sample.offset)
        roundTrips.append(sample.roundTrip)
        if offsets.count > count {
            offsets.removeFirst(offsets.count - count)
            roundTrips.removeFirst(roundTrips.count - count)
        }
    }

    public func estimate(at time: Double) -> ClockEstimate? {
        guard !offsets.isEmpty else { return nil }
        let sorted = offsets.sorted()
        let median = sorted.count % 2 == 1
            ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        return ClockEstimate(offset: median, drift: 0, localTime: time, errorBound: (roundTrips.min() ?? 0) / 2)
    }
}
