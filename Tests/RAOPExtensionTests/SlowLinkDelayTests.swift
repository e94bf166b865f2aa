import Testing
@testable import RAOPExtension

/// The path delay taken off an AirPlay 2 receiver's sync times on slow links: half the least
/// round trip the kernel measured, plus where nqptp's filter settles in the link's jitter.
@Suite struct SlowLinkDelayTests {
    @Test func halfTheLeastRoundTripOnASlowLinkAndNothingOnALANOrWhenUnknown() {
        #expect(SlowLinkDelay.oneWay(leastRoundTrip: .milliseconds(21)) == .microseconds(10_500))
        #expect(SlowLinkDelay.oneWay(leastRoundTrip: .milliseconds(2)) == .milliseconds(1))
        #expect(SlowLinkDelay.oneWay(leastRoundTrip: .microseconds(1_999)) == .zero, "a LAN")
        #expect(SlowLinkDelay.oneWay(leastRoundTrip: .microseconds(40)) == .zero)
        #expect(SlowLinkDelay.oneWay(leastRoundTrip: nil) == .zero, "a transport that cannot tell")
    }

    /// Delays spread evenly over 0–5 ms: a sixteenth of what lies below y balances a 256th of
    /// what lies above (at most 2.5 ms each): y²/160 = (9.375 − 2.5y)/1280, y = 0.9375 ms —
    /// where nqptp settled in the benchmark's jitter (Docs/benchmarks.md).
    @Test func theFollowerSettlesWhereItsRiseAndFallBalance() {
        let even = (0...5_000).map { Duration.microseconds($0) }
        let settled = SlowLinkDelay.followerSettling(excess: even)
        #expect(abs(settled - .microseconds(937)) < .microseconds(3), "\(settled)")
        #expect(SlowLinkDelay.followerSettling(excess: Array(repeating: .milliseconds(3), count: 10)) == .milliseconds(3), "no jitter: the delay itself")
        #expect(SlowLinkDelay.followerSettling(excess: []) == .zero)
        #expect(SlowLinkDelay.followerSettling(excess: [.zero, .zero]) == .zero)
        // Below the limit the fall counts in full: 0 and 1 ms, half each: y/2/16 = (1 − y)/2/256.
        let pair = SlowLinkDelay.followerSettling(excess: [.zero, .milliseconds(1)])
        #expect(abs(pair - .nanoseconds(58_824)) < .microseconds(1), "\(pair)")
    }

    /// On a slow link the round trips' spread, halved, adds where the follower settles; their
    /// level does not (the receiver's time to answer), nor do the first few.
    @Test func aSlowLinksJitterAddsWhereTheFollowerSettlesFromItsSpreadOnly() {
        var link = SlowLinkDelay(leastRoundTrip: .milliseconds(20))
        let spread = (0..<100).map { Duration.microseconds($0 * 100) }  // 0–9.9 ms of round trip
        for roundTrip in spread.prefix(SlowLinkDelay.minimumSpreadSamples - 1) { link.record(roundTrip: .milliseconds(20) + roundTrip) }
        #expect(link.oneWay == .milliseconds(10), "too few round trips: half the least")
        for roundTrip in spread.dropFirst(SlowLinkDelay.minimumSpreadSamples - 1) { link.record(roundTrip: .milliseconds(20) + roundTrip) }
        let expected = Duration.milliseconds(10) + SlowLinkDelay.followerSettling(excess: spread.map { $0 / 2 })
        #expect(link.oneWay == expected)
        #expect(link.oneWay > .microseconds(10_800) && link.oneWay < .microseconds(11_000), "\(link.oneWay)")

        var answeringSlowly = SlowLinkDelay(leastRoundTrip: .milliseconds(20))
        for roundTrip in spread { answeringSlowly.record(roundTrip: .milliseconds(23) + roundTrip) }
        #expect(answeringSlowly.oneWay == link.oneWay, "3 ms to answer each request is not the link's")

        var lan = SlowLinkDelay(leastRoundTrip: .microseconds(300))
        for roundTrip in spread { lan.record(roundTrip: roundTrip) }
        #expect(lan.oneWay == .zero, "a LAN's jitter is left alone")
    }

    @Test func theRoundTripsKeptAreBoundedAndTheOldestGoFirst() {
        var link = SlowLinkDelay(leastRoundTrip: .milliseconds(20))
        for index in 0..<(SlowLinkDelay.roundTripsKept + 30) { link.record(roundTrip: .milliseconds(20 + index)) }
        link.record(roundTrip: .milliseconds(-1))
        #expect(link.roundTrips.count == SlowLinkDelay.roundTripsKept)
        #expect(link.roundTrips.first == .milliseconds(50) && link.roundTrips.last == .milliseconds(20 + SlowLinkDelay.roundTripsKept + 29))
    }
}
