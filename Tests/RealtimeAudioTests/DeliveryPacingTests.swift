import RealtimeAudio
import Testing

@Suite struct DeliveryPacingTests {
    @Test func theClockRunsAtTheDeviceRate() {
        let pacing = DeliveryPacing(sampleRate: 44_100, maxBurst: 441)
        #expect(pacing.clockFrames(after: .zero) == 0)
        #expect(pacing.clockFrames(after: .milliseconds(10)) == 441)
        #expect(pacing.clockFrames(after: .seconds(1)) == 44_100)
        #expect(pacing.clockFrames(after: .seconds(3600) + .milliseconds(10)) == 3600 * 44_100 + 441)
        #expect(pacing.clockFrames(after: .milliseconds(-5)) == 0)
        #expect(pacing.duration(ofFrames: 44_100) == .seconds(1))
        #expect(pacing.duration(ofFrames: 441) == .milliseconds(10))
        // A stream of years does not overflow.
        #expect(pacing.clockFrames(after: .seconds(Int64.max / 2)) == .max)
        #expect(pacing.duration(ofFrames: .max) > .seconds(1_000_000_000))
    }

    @Test func eachTickTakesWhatTheClockRanThrough() {
        var pacing = DeliveryPacing(sampleRate: 48_000, maxBurst: 1920)
        let first = pacing.framesDue(after: .milliseconds(10))
        #expect(first == 480)
        pacing.advance(by: first)
        #expect(pacing.framesDue(after: .milliseconds(10)) == 0, "nothing twice")
        let second = pacing.framesDue(after: .milliseconds(25))
        #expect(second == 720)
        pacing.advance(by: second)
        #expect(pacing.position == 1200)
        #expect(pacing.skipped == 0)
    }

    @Test func aStalledProcessSkipsInsteadOfBursting() {
        var pacing = DeliveryPacing(sampleRate: 44_100, maxBurst: 1764)
        let due = pacing.framesDue(after: .seconds(1))
        #expect(due == 1764, "one burst at most")
        #expect(pacing.skipped == 44_100 - 1764)
        pacing.advance(by: due)
        #expect(pacing.position == 44_100, "the clock is where the device is")
        #expect(pacing.framesDue(after: .seconds(1) + .milliseconds(10)) == 441)
    }
}
