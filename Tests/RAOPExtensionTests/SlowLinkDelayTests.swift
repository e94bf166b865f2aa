import Testing
@testable import RAOPExtension

/// The path delay taken off an AirPlay 2 receiver's sync times: half the least round trip the
/// kernel measured, on slow links only.
@Suite struct SlowLinkDelayTests {
    @Test func halfTheLeastRoundTripOnASlowLinkAndNothingOnALANOrWhenUnknown() {
        #expect(SlowLinkDelay.oneWay(leastRoundTrip: .milliseconds(21)) == .microseconds(10_500))
        #expect(SlowLinkDelay.oneWay(leastRoundTrip: .milliseconds(2)) == .milliseconds(1))
        #expect(SlowLinkDelay.oneWay(leastRoundTrip: .microseconds(1_999)) == .zero, "a LAN")
        #expect(SlowLinkDelay.oneWay(leastRoundTrip: .microseconds(40)) == .zero)
        #expect(SlowLinkDelay.oneWay(leastRoundTrip: nil) == .zero, "a transport that cannot tell")
    }
}
