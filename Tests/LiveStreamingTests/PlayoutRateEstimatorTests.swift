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
        var estimator = PlayoutRateEstimator(configuration: Self.fresh)
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

    /// A device that reads its position when asked (no timer between).
    static let fresh = PlayoutRateEstimator.Configuration(positionAge: .zero)

    /// Two hours of a device at ±100 ppm reporting whole seconds read when asked, corrected by the estimator's
    /// production rate: the backlog it plays behind (its latency) comes back and stays, where
    /// without correction it moves by 0.72 s.
    @Test(arguments: [100.0, -100.0]) func twoHoursOfDriftNeitherRunDryNorGrowTheLatency(_ ppm: Double) throws {
        var estimator = PlayoutRateEstimator(configuration: Self.fresh)
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

    /// A renderer reporting whole seconds, polled every second dithered ±50 %, each answer
    /// `roundTrip` after its question, its clock `ppm` from the box's, the stream produced at the
    /// estimator's rate: calls `check` with the estimator, the box time and the backlog (produced
    /// less played) after each report. The renderer reads its position when asked, or with a
    /// `timer`, on its ticks (gmediarender: every 500 ms, each a little late) and answers the last.
    func wholeSecondRenderer(
        ppm: Double, seconds: Double, phase: Double = 0.37, roundTrip: Double = 0.002, stall: (at: Double, for: Double)? = nil,
        timer: (period: Double, lateBy: Double)? = nil, staleBy: Double = 0, configuration: PlayoutRateEstimator.Configuration = fresh,
        check: (PlayoutRateEstimator, Double, Double, PlayoutRateEstimator.Rejection?) -> Void
    ) {
        var estimator = PlayoutRateEstimator(configuration: configuration)
        var produced = 0.0, time = 0.0, index = 0
        var tick = 0.123
        func played(_ time: Double) -> Double {
            let stalled = stall.map { time < $0.at ? 0 : min($0.for, time - $0.at) } ?? 0
            return (time - stalled) * (1 + ppm * 1e-6)
        }
        while time < seconds {
            let asked = time - roundTrip * (0.5 + jitter(index + 7, 0.5))
            // Read somewhere on the way, or at the timer's last tick.
            var read = asked + (time - asked) * (0.5 + jitter(index + 13, 0.5))
            if let timer {
                while tick + timer.period + timer.lateBy <= read { tick += timer.period + timer.lateBy }
                read = tick
            }
            // A device whose positions are older than it was said they may be.
            read -= staleBy * (0.5 + jitter(index + 29, 0.5))
            let rejection = estimator.add(position: (played(read) + phase).rounded(.down), at: time, produced: produced, asked: asked)
            check(estimator, time, produced - played(time), rejection)
            let step = 1.0 + jitter(index, 0.5)
            produced += step * estimator.productionRate
            time += step
            index += 1
        }
    }

    /// gmediarender on the box's own clock (the lab's): nothing to correct, and nothing is. A
    /// least-squares fit of its whole seconds became sure enough of the rate only after ~22
    /// minutes, with the position then known to no better than ~20 ms, and its correction moved
    /// the renderer by tens of milliseconds for nothing (up to 127 ms in a 50-minute group).
    @Test func aRendererOnTheBoxsClockIsNotMovedByItsWholeSecondReports() {
        var worst = 0.0
        var estimated = false
        wholeSecondRenderer(ppm: 0, seconds: 3_000) { estimator, _, backlog, rejection in
            #expect(rejection == nil)
            worst = max(worst, abs(backlog))
            if estimator.estimate != nil { estimated = true }
        }
        #expect(estimated)
        #expect(worst < 0.005, "the renderer was moved by \(worst * 1_000) ms")
    }

    /// Whole-second reports bound the device's phase to about a poll interval over their count:
    /// the rate is known to a few ppm in twenty minutes, where least squares (its error falling
    /// as 1/√n from ±0.5 s per report) was still beyond 20 ppm.
    @Test func wholeSecondReportsPinTheRateInTwentyMinutes() throws {
        var last: PlayoutRateEstimator.Estimate?
        wholeSecondRenderer(ppm: 50, seconds: 1_200) { estimator, _, _, _ in last = estimator.estimate }
        let estimate = try #require(last)
        #expect(estimate.uncertaintyPPM < 10)
        #expect(abs(estimate.ratePPM - 50) < 5)
    }

    /// gmediarender answers the position its player had at its last 500 ms tick, and its ticks
    /// come a little late each time (here 0.1 ms): taken as read when asked, its reports look like
    /// a clock 200 ppm slow, and the "correction" moved a renderer on the box's own clock by
    /// hundreds of milliseconds. With the age its positions may have, the bound holds the truth,
    /// and nothing is moved.
    @Test(arguments: [0.0001, 0.0003, 0.001]) func positionsReadOnATimerAreTakenAsOldAsTheyMayBe(_ lateBy: Double) {
        var worst = 0.0
        let aged = PlayoutRateEstimator.Configuration(positionAge: .milliseconds(600))
        wholeSecondRenderer(ppm: 0, seconds: 3_600, timer: (0.5, lateBy), configuration: aged) { estimator, _, backlog, rejection in
            #expect(rejection == nil)
            worst = max(worst, abs(backlog))
            if let estimate = estimator.estimate { #expect(abs(estimate.ratePPM) <= estimate.uncertaintyPPM + 0.05, "\(estimate)") }
        }
        #expect(worst < 0.005, "the renderer was moved by \(worst * 1_000) ms")
    }

    /// The same renderer's clock 100 ppm slow for two hours: its timer-read positions allow
    /// only a wide interval, and the stream is corrected by the part of it that is sure — never
    /// past the device's rate, so its latency grows less than uncorrected and never turns back.
    @Test func aTimerReadRendererThatDriftsIsCorrectedOnlyByWhatIsSure() {
        var final = 0.0
        let aged = PlayoutRateEstimator.Configuration(positionAge: .milliseconds(600))
        wholeSecondRenderer(ppm: -100, seconds: 7_200, timer: (0.5, 0.0003), configuration: aged) { estimator, _, backlog, _ in
            // Slow: the backlog grows (the renderer plays later); a correction past the rate would shrink it below zero.
            #expect(backlog > -0.005)
            final = backlog
        }
        // Uncorrected: 0.72 s.
        #expect(final < 0.6, "latency grew by \(final) s")
    }

    /// The interval holds the device's true rate whenever there is one, at any rate and however
    /// slow the answers (40 ms round trips): it is a bound, not a guess.
    @Test(arguments: [-300.0, -35.0, 0.0, 80.0]) func theTrueRateIsAlwaysWithinTheBound(_ ppm: Double) {
        var checked = 0
        wholeSecondRenderer(ppm: ppm, seconds: 2_400, roundTrip: 0.040) { estimator, _, _, rejection in
            #expect(rejection == nil)
            guard let estimate = estimator.estimate else { return }
            // The truth as the stream was produced (the correction moves the rate the device is
            // fed at, not the one it plays at).
            #expect(abs(estimate.ratePPM - ppm) <= estimate.uncertaintyPPM + 0.05, "\(estimate)")
            checked += 1
        }
        #expect(checked > 100)
    }

    /// A device whose positions are up to 60 ms older than its stated age: its reports
    /// contradict each other by that much, and the interval widens with the contradiction
    /// rather than narrow to the one rate that contradicts them least (which was 21 ppm off
    /// with a bound under 1 ppm). The stream follows a rate between the box's and the device's,
    /// never beyond the device's.
    @Test(arguments: [-80.0, 0.0, 80.0]) func reportsThatContradictALittleWidenTheBound(_ ppm: Double) {
        var followed = 1.0
        wholeSecondRenderer(ppm: ppm, seconds: 3_600, staleBy: 0.06) { estimator, _, _, rejection in
            #expect(rejection == nil)
            if let estimate = estimator.estimate { #expect(abs(estimate.ratePPM - ppm) <= estimate.uncertaintyPPM + 0.05, "\(estimate)") }
            let followedPPM = ((estimator.lastRate ?? 1) - 1) * 1e6
            #expect(followedPPM * ppm >= -0.05 && abs(followedPPM) <= abs(ppm) + 0.05, "followed \(followedPPM) ppm")
            followed = followedPPM
        }
        // After an hour the reports are sure of part of a drift that large.
        if ppm != 0 { #expect(abs(followed) > 20, "followed \(followed) ppm") }
    }

    /// A renderer that stopped for half a second (to buffer) and went on: its reports before and
    /// after contradict each other, so the estimate starts again rather than average the two.
    @Test func aRendererThatStallsStartsTheEstimateAgain() {
        var jumpedAt: Double?
        wholeSecondRenderer(ppm: 0, seconds: 1_500, stall: (at: 1_000, for: 0.5)) { estimator, time, _, rejection in
            if rejection == .jumped, jumpedAt == nil { jumpedAt = time }
        }
        #expect(jumpedAt.map { $0 >= 1_000 && $0 < 1_030 } ?? false, "jumped at \(String(describing: jumpedAt))")
    }
}
