import Testing
@testable import RAOPExtension

/// The path delay taken off an AirPlay 2 receiver's sync times: half the least round trip, on
/// slow links only, once there are enough round trips to trust.
@Suite struct SlowLinkDelayTests {
    @Test func halfTheLeastRoundTripOnASlowLinkAndNothingOnALAN() {
        var slow = SlowLinkDelay()
        for milliseconds in [25, 21, 30] { slow.note(.milliseconds(milliseconds)) }
        #expect(slow.oneWay == .zero, "three round trips are not enough")
        slow.note(.milliseconds(22))
        #expect(slow.oneWay == .microseconds(10_500), "half the least (21 ms)")
        // Only the last 16 count: an old fast one is forgotten.
        for _ in 0..<16 { slow.note(.milliseconds(40)) }
        #expect(slow.oneWay == .milliseconds(20))

        var lan = SlowLinkDelay()
        for microseconds in [900, 300, 5_000, 12_000, 400] { lan.note(.microseconds(microseconds)) }
        #expect(lan.oneWay == .zero, "a LAN's round trip is mostly the receiver's own work")
        lan.note(.milliseconds(-1))
        #expect(lan.oneWay == .zero)
    }
}
