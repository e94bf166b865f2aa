/// Runs an estimator against a simulated link, sampling every `interval` seconds
/// of simulated time, and measures how far its offset is from the truth.
public struct ClockSyncSimulation: Sendable {
    /// Absolute offset errors (seconds), one per sample after the warm-up.
    public var errors: [Double]
    /// Seconds after a step until the error stayed below `tolerance`, when a step was injected.
    public var convergenceAfterStep: Double?

    public static func run<Estimator: ClockEstimator>(
        _ estimator: Estimator, link: SimulatedClockLink, duration: Double, interval: Double = 1,
        warmUp: Double = 30, step: (at: Double, by: Double)? = nil, tolerance: Double = 0.0002
    ) -> ClockSyncSimulation {
        var estimator = estimator
        var link = link
        var errors: [Double] = []
        var stepped = false
        var lastBad: Double?
        var time = 0.0
        while time < duration {
            if let step, !stepped, time >= step.at {
                link.offset += step.by
                stepped = true
                lastBad = time
            }
            if let sample = link.exchange(at: time) { estimator.add(sample) }
            let now = time + interval / 2
            if let estimate = estimator.estimate(at: now) {
                let error = abs(estimate.offset(at: now) - link.trueOffset(at: now))
                if time >= warmUp && (step == nil || time < step!.at) { errors.append(error) }
                if stepped, error >= tolerance { lastBad = time }
            }
            time += interval
        }
        let convergence = step.flatMap { step in lastBad.map { $0 + interval - step.at } }
        return ClockSyncSimulation(errors: errors, convergenceAfterStep: convergence)
    }

    /// The `p`-quantile (0...1) of the errors.
    public func percentile(_ p: Double) -> Double {
        let sorted = errors.sorted()
        guard !sorted.isEmpty else { return .nan }
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }
}
