import Testing
@testable import RAOPExtension

/// How far apart two durations are.
private func distance(_ a: Duration, _ b: Duration) -> Duration { a > b ? a - b : b - a }

/// The path delay taken off an AirPlay 2 receiver's sync times on slow links: half the least
/// round trip the kernel measured, plus where nqptp's filter settles in the link's jitter.
@Suite struct SlowLinkDelayTests {
    @Test func halfTheLeastRoundTripOnASlowLinkAndNothingOnALANOrWhenUnknown() {
        #expect(SlowLinkDelay.oneWay(leastRoundTrip: .milliseconds(21)) == .microseconds(10_500))
        #expect(SlowLinkDelay.oneWay(leastRoundTrip: .milliseconds(2)) == .milliseconds(1))
        #expect(SlowLinkDelay.oneWay(leastRoundTrip: .microseconds(1_999)) == .zero, "a LAN")
        #expect(SlowLinkDelay.oneWay(leastRoundTrip: .microseconds(40)) == .zero)
        #expect(SlowLinkDelay.oneWay(leastRoundTrip: nil) == .zero, "a transport that cannot tell")
        #expect(SlowLinkDelay.oneWay(leastRoundTrip: .seconds(3)) == SlowLinkDelay.maximumOneWay, "a receiver holding its answers moves its own times only so far")
    }

    /// Delays spread evenly over 0–5 ms: a sixteenth of what lies below y balances a 256th of
    /// what lies above (at most 2.5 ms each): y²/160 = (9.375 − 2.5y)/1280, y = 0.9375 ms —
    /// where nqptp settled in the benchmark's jitter (Docs/benchmarks.md).
    @Test func theFollowerSettlesWhereItsRiseAndFallBalance() {
        let even = (0...5_000).map { Duration.microseconds($0) }
        let settled = SlowLinkDelay.followerSettling(excess: even)
        #expect(distance(settled, .microseconds(937)) < .microseconds(3), "\(settled)")
        #expect(SlowLinkDelay.followerSettling(excess: Array(repeating: .milliseconds(3), count: 10)) == .milliseconds(3), "no jitter: the delay itself")
        #expect(SlowLinkDelay.followerSettling(excess: []) == .zero)
        #expect(SlowLinkDelay.followerSettling(excess: [.zero, .zero]) == .zero)
        // Below the limit the fall counts in full: 0 and 1 ms, half each: y/2/16 = (1 − y)/2/256.
        let pair = SlowLinkDelay.followerSettling(excess: [.zero, .milliseconds(1)])
        #expect(distance(pair, .nanoseconds(58_824)) < .microseconds(1), "\(pair)")
    }

    /// Round trips made of two ways each delayed 0–5 ms evenly (every pair of a 0.25 ms grid):
    /// one way's share of their spread, found by deconvolving it, puts the follower where it
    /// settles on one way (0.94 ms); halving the round trips would put it 0.4 ms further.
    @Test func oneWaysShareOfTheRoundTripsSpreadIsDeconvolvedNotHalved() {
        let grid = (0...20).map { Duration.microseconds($0 * 250) }
        let sums = grid.flatMap { first in grid.map { first + $0 } }
        let oneWay = SlowLinkDelay.oneWayDistribution(roundTripExcess: sums)
        #expect(oneWay.delays.count == 41 && abs(oneWay.weights.reduce(0, +) - 1) < 1e-9)
        let settled = SlowLinkDelay.followerSettling(delays: oneWay.delays, weights: oneWay.weights)
        #expect(distance(settled, .microseconds(937)) < .microseconds(100), "\(settled)")
        let halved = SlowLinkDelay.followerSettling(excess: sums.map { $0 / 2 })
        #expect(halved - settled > .microseconds(300), "halving: \(halved)")

        let still = SlowLinkDelay.oneWayDistribution(roundTripExcess: Array(repeating: .zero, count: 20))
        #expect(SlowLinkDelay.followerSettling(delays: still.delays, weights: still.weights) == .zero, "no jitter, nothing to add")
        let far = SlowLinkDelay.oneWayDistribution(roundTripExcess: [.zero, .seconds(1), .milliseconds(3)])
        #expect(far.delays.count == SlowLinkDelay.distributionSteps + 1, "a round trip a second above the least is counted as the grid's end")
    }

    /// On a slow link the round trips' spread adds where the follower settles on one way;
    /// their level does not (the receiver's time to answer), nor do the first few.
    @Test func aSlowLinksJitterAddsWhereTheFollowerSettlesFromItsSpreadOnly() {
        let grid = (0...20).map { Duration.microseconds($0 * 250) }
        // Every other pair: 221 round trips, fewer than are kept.
        let spread = grid.flatMap { first in grid.map { first + $0 } }.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
        var link = SlowLinkDelay(leastRoundTrip: .milliseconds(20))
        for roundTrip in spread.prefix(SlowLinkDelay.minimumSpreadSamples - 1) { link.record(roundTrip: .milliseconds(20) + roundTrip) }
        #expect(link.oneWay == .milliseconds(10), "too few round trips: half the least")
        for roundTrip in spread.dropFirst(SlowLinkDelay.minimumSpreadSamples - 1) { link.record(roundTrip: .milliseconds(20) + roundTrip) }
        #expect(link.oneWay > .microseconds(10_700) && link.oneWay < .microseconds(11_150), "\(link.oneWay)")

        var answeringSlowly = SlowLinkDelay(leastRoundTrip: .milliseconds(20))
        for roundTrip in spread { answeringSlowly.record(roundTrip: .milliseconds(23) + roundTrip) }
        #expect(answeringSlowly.oneWay == link.oneWay, "3 ms to answer each request is not the link's")

        var lowerEarlier = SlowLinkDelay(leastRoundTrip: .milliseconds(20))
        lowerEarlier.record(roundTrip: .milliseconds(19))
        for roundTrip in spread { lowerEarlier.record(roundTrip: .milliseconds(20) + roundTrip) }
        #expect(lowerEarlier.oneWay > link.oneWay && lowerEarlier.oneWay < link.oneWay + .milliseconds(1),
                "a round trip 1 ms below the newest two minutes' widens their spread: \(lowerEarlier.oneWay)")

        var lan = SlowLinkDelay(leastRoundTrip: .microseconds(300))
        for roundTrip in spread { lan.record(roundTrip: roundTrip) }
        #expect(lan.oneWay == .zero, "a LAN's jitter is left alone")
    }

    /// A follower that has just started sits near the soonest of its first second's eight
    /// Follow_Ups (0–5 ms evenly: about 0.5 ms), then rises into the jitter at most 2.5 ms /
    /// 256 a Follow_Up until it settles (0.94 ms), and stays there.
    @Test func aFollowerThatJustStartedRisesIntoTheJitterUntilItSettles() {
        #expect(SlowLinkDelay.followUps(after: .seconds(1)) == 8)
        #expect(SlowLinkDelay.followUps(after: .seconds(10)) == 80)
        #expect(SlowLinkDelay.followUps(after: .seconds(-1)) == 0)
        let delays = (0...20).map { Double($0) * 0.000_25 }
        let weights = Array(repeating: 1.0, count: delays.count)
        let settled = SlowLinkDelay.followerSettling(delays: delays, weights: weights)
        let start = SlowLinkDelay.followerSettling(delays: delays, weights: weights, after: .milliseconds(500))
        #expect(start > .microseconds(400) && start < .microseconds(650), "\(start)")
        var previous = start
        for seconds in [2, 4, 8, 16, 30] {
            let now = SlowLinkDelay.followerSettling(delays: delays, weights: weights, after: .seconds(seconds))
            #expect(now >= previous && now <= settled, "\(seconds) s: \(now)")
            previous = now
        }
        #expect(SlowLinkDelay.followerSettling(delays: delays, weights: weights, after: .seconds(2)) < settled - .microseconds(200), "still rising after two seconds")
        #expect(SlowLinkDelay.followerSettling(delays: delays, weights: weights, after: .seconds(60)) == settled)
        #expect(SlowLinkDelay.followerSettling(delays: delays, weights: weights, after: nil) == settled)
    }

    /// The kernel's smoothed round trip moves an eighth of the way to each sample: the sample
    /// is 8 × after − 7 × before; no move, an unknown reading or a negative result is no sample.
    @Test func theKernelsSampleIsRecoveredFromItsSmoothedRoundTrip() {
        #expect(RTSPClient.sample(before: .microseconds(20_000), after: .microseconds(20_500)) == .microseconds(24_000))
        #expect(RTSPClient.sample(before: .microseconds(20_000), after: .microseconds(20_000)) == nil)
        #expect(RTSPClient.sample(before: nil, after: .microseconds(20_000)) == nil)
        #expect(RTSPClient.sample(before: .microseconds(20_000), after: .microseconds(1_000)) == nil)
    }

    /// The spread is the newest 600 round trips', the least the newest 1 200's; no more is kept.
    @Test func theRoundTripsKeptAreBoundedAndTheOldestGoFirst() {
        var link = SlowLinkDelay(leastRoundTrip: .milliseconds(20))
        let count = SlowLinkDelay.roundTripsForTheLeast + 30
        for index in 0..<count { link.record(roundTrip: .milliseconds(20) + .microseconds(index)) }
        link.record(roundTrip: .milliseconds(-1))
        #expect(link.roundTrips.count == SlowLinkDelay.roundTripsKept)
        let base = Duration.milliseconds(20)
        #expect(link.roundTrips.first == base + .microseconds(count - SlowLinkDelay.roundTripsKept))
        #expect(link.roundTrips.last == base + .microseconds(count - 1))
        // Half the kernel's 20 ms plus where the follower settles on one way's share of round
        // trips 0.6–1.2 ms above the oldest kept for the least (two to five 0.25 ms cells):
        // 0.29 ms by a replica of the same steps in Python.
        let oneWay = link.oneWay
        #expect(oneWay > .microseconds(10_200) && oneWay < .microseconds(10_400), "\(oneWay)")
    }
}
