

/// MediaRoute's clock estimator: offset **and** drift from the samples with the
/// lowest round trips, fitted by least squares over a sliding window.
///
/// Why: a sample's offset error is bounded by half its round trip, and queueing
/// only ever adds delay, so the lowest-round-trip samples are the truest. A
/// median of raw offsets (Snapcast's method) both keeps the jitter of ordinary
/// samples and, under skew, lags behind the moving offset by half its window
/// (~100 s × skew). Fitting a line through the best samples removes that lag
/// and measures the skew, so the offset can be extrapolated between samples.
///
/// Per window: samples are bucketed by local time (`bucket` seconds, default one
/// sample each); in each bucket the lowest-round-trip sample is kept; the
/// `keepFraction` of those with the lowest round trips are fitted with a line,
/// weighted towards lower round trips, and the line is moved to the
/// `residualQuantile` of its residuals. A sample that disagrees with the
/// line by more than `stepThreshold` three times in a row is a clock step: the
/// window restarts from it.
public struct DriftTrackingEstimator: ClockEstimator {
    public var window: Double
    public var bucket: Double
    public var stepThreshold: Double
    /// The share of bucket minima, lowest round trips first, that the fit uses.
    public var keepFraction: Double
    /// Which quantile of the fit's residuals the line is moved to (0.5 ≈ no shift).
    public var residualQuantile: Double = 0.3
    private var minima: [ClockSample] = []
    private var suspects: [ClockSample] = []

    public init(window: Double = 600, bucket: Double = 1, stepThreshold: Double = 0.005, keepFraction: Double = 0.08) {
        self.window = window
        self.bucket = bucket
        self.stepThreshold = stepThreshold
        self.keepFraction = keepFraction
    }

    public mutating func add(_ sample: ClockSample) {
        guard sample.roundTrip.isFinite, sample.roundTrip >= 0 else { return }
        if let fit = estimate(at: sample.localTime), minima.count >= 4,
            abs(sample.offset - fit.offset) > stepThreshold + sample.roundTrip / 2
        {
            suspects.append(sample)
            guard suspects.count >= 3 else { return }
            // Three disagreeing samples in a row: the peer's clock stepped.
            minima = suspects
            suspects.removeAll()
            return
        }
        suspects.removeAll()
        let slot = (sample.localTime / bucket).rounded(.down)
        if let last = minima.last, (last.localTime / bucket).rounded(.down) == slot {
            if sample.roundTrip < last.roundTrip { minima[minima.count - 1] = sample }
        } else {
            minima.append(sample)
        }
        let horizon = sample.localTime - window
        if let first = minima.firstIndex(where: { $0.localTime >= horizon }), first > 0 {
            minima.removeFirst(first)
        }
    }

    public func estimate(at time: Double) -> ClockEstimate? {
        guard !minima.isEmpty else { return nil }
        let best = minima.map(\.roundTrip).min()!
        // Only the best `keep` of the bucket minima enter the fit; weight falls off
        // with the round trip's excess over the best one.
        let keep = max(4, Int((Double(minima.count) * keepFraction).rounded(.up)))
        let cutoff = minima.map(\.roundTrip).sorted()[min(keep, minima.count) - 1]
        let chosen = minima.filter { $0.roundTrip <= cutoff }
        let scale = max(best, 50e-6)
        var sw = 0.0, sx = 0.0, sy = 0.0, sxx = 0.0, sxy = 0.0
        let origin = minima[0].localTime
        for sample in chosen {
            let excess = (sample.roundTrip - best) / scale
            let weight = 1 / (1 + excess * excess)
            let x = sample.localTime - origin
            sw += weight
            sx += weight * x
            sy += weight * sample.offset
            sxx += weight * x * x
            sxy += weight * x * sample.offset
        }
        let denominator = sw * sxx - sx * sx
        let span = (minima.last!.localTime - origin)
        let slope = chosen.count >= 3 && span >= 10 && abs(denominator) > 1e-12 ? (sw * sxy - sx * sy) / denominator : 0
        var intercept = (sy - slope * sx) / sw
        var spread = 0.0
        var residuals: [Double] = []
        for sample in chosen {
            let residual = sample.offset - (intercept + slope * (sample.localTime - origin))
            residuals.append(residual)
            spread += residual * residual
        }
        spread = (spread / Double(chosen.count)).squareRoot()
        // Queueing delay biases offsets one way (towards the slower direction), so
        // the line is moved towards the residuals' lower quantile, not their mean.
        if residuals.count >= 8 {
            residuals.sort()
            intercept += residuals[Int(Double(residuals.count) * residualQuantile)]
        }
        return ClockEstimate(
            offset: intercept + slope * (time - origin), drift: slope, localTime: time,
            errorBound: best / 2 + spread)
    }
}
