import LiveStreaming
import Testing

/// The device's clock from its position reports, on numbers: simulated devices whose clocks run
/// at another rate than the box's, reporting precise or whole-second positions, and hostile ones.
@Suite struct PlayoutRateEstimatorTests {
    /// A deterministic jitter in ±`amplitude` (no randomness: the same run every time).
    func jitter(_ index: Int, _ amplitude: Double) -> Double {
        var x = UInt64(truncatingIfNeeded: index) &* 0x9E37_79B9_7F4A_7C15
        x = (x ^ (x >> 31)) &* 0xBF58_476D_1CE4_E5B9
        return (Double(x >> 11) / Double(1 << 53) * 2 - 1) * amplitude
    }

    @Test func aCastLikeDeviceAt100PPMIsMeasuredWithinAFewPPMInFiveMinutes() throws {
        var estimator = PlayoutRateEstimator()
        // Reports every 5 s, positions to the millisecond with 3 ms of transit jitter; not
        // corrected, so the stream is produced at the box's rate.
        for index in 0...60 {
            let time = 1_000 + Double(index) * 5
            let position = 0.01 + (time - 1_000) * (1 + 100e-6) + jitter(index, 0.003)
            #expect(estimator.add(position: (position * 1_000).rounded() / 1_000, at: time, produced: time - 1_000 + 2) == nil)
        }
        let estimate = try #require(estimator.estimate)
        #expect(abs(estimate.ratePPM - 100) < 5)
        #expect(estimate.uncertaintyPPM < 20)
        // 300 s at 100 ppm: the device has played 30 ms more than was produced for it.
        #expect(abs(estimate.offset - -0.030) < 0.004)
    }

    @Test func wholeSecondPositionsNeedLongerAndStillFindTheRate() throws {
        var estimator = PlayoutRateEstimator()
        var time = 50.0
        var index = 0
        var usableAfter: Double?
        // gmediarender: RelTime truncated to whole seconds, polled every second, dithered ±50 %.
        while time < 50 + 3_600 {
            let position = ((time - 50) * (1 - 80e-6)).rounded(.down)
            estimator.add(position: position, at: time, produced: time - 50)
            if usableAfter == nil, estimator.estimate != nil { usableAfter = time - 50 }
            time += 1 + jitter(index, 0.5)
            index += 1
        }
        let after = try #require(usableAfter)
        // Not from a few minutes of rounded positions: the rounding is ±0.5 s.
        #expect(after > 300)
        let estimate = try #require(estimator.estimate)
        #expect(abs(estimate.ratePPM - -80) < 15)
    }

    /// Two hours of a device at ±100 ppm reporting whole seconds, corrected by the estimator's
    /// production rate: the backlog it plays behind (its latency) comes back and stays, where
    /// without correction it moves by 0.72 s.
    @Test(arguments: [100.0, -100.0]) func twoHoursOfDriftNeitherRunDryNorGrowTheLatency(_ ppm: Double) throws {
        var estimator = PlayoutRateEstimator()
        var produced = 0.0
        var uncorrected = 0.0
        var time = 0.0
        var worst = 0.0
        var index = 0
        while time < 7_200 {
            // Polled every second, dithered ±50 % as UPnP's live poll is: a poll locked to the
            // device's whole seconds would see a sawtooth for a rate.
            let step = 1.0 + jitter(index, 0.5)
            // The device plays at its rate; the stream is produced at the estimator's.
            let played = time * (1 + ppm * 1e-6)
            estimator.add(position: played.rounded(.down), at: time, produced: produced)
            let backlog = produced - played
            worst = max(worst, abs(backlog))
            produced += step * estimator.productionRate
            uncorrected += step
            time += step
            index += 1
        }
        let final = produced - time * (1 + ppm * 1e-6)
        #expect(abs(uncorrected - time * (1 + ppm * 1e-6)) > 0.7)
        #expect(abs(final) < 0.03, "latency moved by \(final) s after two hours")
        // What built up before the estimate was sure enough, brought back after.
        #expect(worst < 0.25, "latency moved by up to \(worst) s")
        let estimate = try #require(estimator.estimate)
        #expect(abs(estimate.ratePPM - ppm) < 10)
    }

    @Test func whatIsNotANumberOrGoesBackIsRefused() throws {
        var estimator = PlayoutRateEstimator()
        #expect(estimator.add(position: .nan, at: 1, produced: 0) == .notANumber)
        #expect(estimator.add(position: -1, at: 1, produced: 0) == .notANumber)
        #expect(estimator.add(position: 1, at: .infinity, produced: 0) == .notANumber)
        #expect(estimator.add(position: 1e300, at: 1, produced: 0) == .notANumber)
        #expect(estimator.count == 0)
        #expect(estimator.add(position: 10, at: 10, produced: 10) == nil)
        #expect(estimator.add(position: 11, at: 9, produced: 10) == .outOfOrder)
        #expect(estimator.add(position: 11, at: 11, produced: 11) == nil)
        // Backwards (a device that started again): the run restarts from this report.
        #expect(estimator.add(position: 2, at: 12, produced: 12) == .jumped)
        #expect(estimator.count == 1)
        // A leap forward (a seek, a re-fetch further on) too.
        #expect(estimator.add(position: 3, at: 13, produced: 13) == nil)
        #expect(estimator.add(position: 30, at: 14, produced: 14) == .jumped)
        #expect(estimator.count == 1)
    }

    @Test func aSlopeNoClockHasIsNoEstimateAndChangesNothing() throws {
        var estimator = PlayoutRateEstimator()
        // 5 000 ppm: a device (or a neighbour) reporting what no crystal does.
        for index in 0...200 {
            let time = Double(index)
            estimator.add(position: time * 1.005, at: time, produced: time)
        }
        #expect(estimator.estimate == nil)
        #expect(estimator.productionRate == 1)
    }

    @Test func theTableIsBoundedAndTheTrimCapped() throws {
        let configuration = PlayoutRateEstimator.Configuration(capacity: 64, minimumSpan: .seconds(10), maximumTrim: 300)
        var estimator = PlayoutRateEstimator(configuration: configuration)
        // The stream produced 2 s more than the device played (a backlog built up at once):
        // far more than the trim brings back in one correction time.
        for index in 0..<10_000 {
            let time = Double(index)
            estimator.add(position: time + 0.25, at: time, produced: time + (index > 100 ? 2 : 0))
        }
        #expect(estimator.count == 64)
        let estimate = try #require(estimator.estimate)
        #expect(abs(estimate.ratePPM) < 1)
        #expect(abs((estimator.productionRate - 1) * 1e6 - -300) < 1)
    }

    @Test func aRestartKeepsTheRateFoundSoFar() throws {
        var estimator = PlayoutRateEstimator(configuration: PlayoutRateEstimator.Configuration(minimumSpan: .seconds(30)))
        for index in 0...60 {
            let time = Double(index)
            estimator.add(position: time * (1 + 200e-6), at: time, produced: time)
        }
        let before = estimator.productionRate
        #expect(before > 1)
        estimator.restart()
        #expect(estimator.estimate == nil)
        #expect(abs(estimator.productionRate - (1 + 200e-6)) < 5e-6)
    }
}
