import Coordination
import Testing

@Suite struct ClockSampleTests {
    @Test func offsetAndRoundTripFollowTheFourTimestamps() {
        // Peer is 10 s ahead; 1 ms each way; 0.5 ms of processing.
        let sample = ClockSample(t1: 100, t2: 110.001, t3: 110.0015, t4: 100.0025)
        #expect(abs(sample.offset - 10) < 1e-9)
        #expect(abs(sample.roundTrip - 0.002) < 1e-9)
        #expect(sample.localTime == 100.00125)
    }

    @Test func theSimulationIsDeterministic() {
        let link = SimulatedClockLink(jitterMean: 0.002, skew: 50e-6, seed: 42)
        let a = ClockSyncSimulation.run(DriftTrackingEstimator(), link: link, duration: 300)
        let b = ClockSyncSimulation.run(DriftTrackingEstimator(), link: link, duration: 300)
        #expect(a.errors == b.errors)
        #expect(!a.errors.isEmpty)
    }
}

@Suite struct DriftTrackingEstimatorTests {
    let asymmetric = (request: 1.5, reply: 0.5)

    @Test func skewIsMeasuredAndDoesNotBecomeLag() {
        var link = SimulatedClockLink(jitterMean: 0.0002, requestFactor: 1.5, replyFactor: 0.5, offset: 0.25, skew: 100e-6, seed: 3)
        var estimator = DriftTrackingEstimator()
        for second in 0..<900 {
            if let sample = link.exchange(at: Double(second)) { estimator.add(sample) }
        }
        let estimate = try! #require(estimator.estimate(at: 900))
        #expect(abs(estimate.drift - 100e-6) < 2e-6, "drift \(estimate.drift)")
        // What remains is the path asymmetry's bias (0.15 ms here), which no two-way exchange can see.
        #expect(abs(estimate.offset(at: 900) - link.trueOffset(at: 900)) < 0.0002)
        #expect(estimate.errorBound >= 0.0003 && estimate.errorBound < 0.001)
    }

    @Test(arguments: [0.0, 20e-6, 100e-6])
    func beatsTheMedianOfTheLast200UnderSkewAndJitter(skew: Double) {
        let link = SimulatedClockLink(jitterMean: 0.002, requestFactor: 1.5, replyFactor: 0.5, offset: -3, skew: skew, seed: 11)
        let ours = ClockSyncSimulation.run(DriftTrackingEstimator(), link: link, duration: 1200)
        let median = ClockSyncSimulation.run(MedianOffsetEstimator(count: 200), link: link, duration: 1200)
        #expect(ours.percentile(0.95) < 0.00035)
        #expect(ours.percentile(0.95) < median.percentile(0.95) / 3)
        if skew >= 100e-6 {
            // The median lags by about 100 s × skew.
            #expect(median.percentile(0.5) > 0.008)
        }
    }

    @Test func aClockStepIsFollowedWithinSeconds() {
        let link = SimulatedClockLink(jitterMean: 0.0002, requestFactor: 1.5, replyFactor: 0.5, skew: 20e-6, seed: 5)
        let ours = ClockSyncSimulation.run(DriftTrackingEstimator(), link: link, duration: 900, step: (600, 0.030), tolerance: 0.001)
        let median = ClockSyncSimulation.run(MedianOffsetEstimator(), link: link, duration: 900, step: (600, 0.030), tolerance: 0.001)
        #expect((ours.convergenceAfterStep ?? .infinity) <= 5)
        #expect((median.convergenceAfterStep ?? .infinity) > 50)
    }

    @Test func lostAndOutlyingSamplesDoNotDerailIt() {
        var link = SimulatedClockLink(jitterMean: 0.0005, loss: 0.3, offset: 1, skew: -30e-6, seed: 9)
        var estimator = DriftTrackingEstimator()
        for second in 0..<600 {
            if var sample = link.exchange(at: Double(second)) {
                // One in fifty replies is held 200 ms somewhere (a Wi-Fi retry storm).
                if second % 50 == 0 { sample.t4 += 0.2 }
                estimator.add(sample)
            }
        }
        let estimate = try! #require(estimator.estimate(at: 600))
        #expect(abs(estimate.offset(at: 600) - link.trueOffset(at: 600)) < 0.0002)
        #expect(abs(estimate.drift + 30e-6) < 3e-6)
        #expect(DriftTrackingEstimator().estimate(at: 0) == nil)
    }
}
