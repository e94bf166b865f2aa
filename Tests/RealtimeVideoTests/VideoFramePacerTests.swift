import RealtimeVideo
import Testing

/// Pictures as the app writes them, one per frame period out: on numbers.
@Suite struct VideoFramePacerTests {
    let period = Duration.milliseconds(40)

    @Test func theFirstPictureShowsAtOnceAndOneAtEachSlotAfter() {
        var pacer = VideoFramePacer(period: period)
        #expect(pacer.slot(at: .zero) == nil)  // nothing yet
        pacer.arrived(at: .milliseconds(5))
        #expect(pacer.slot(at: .milliseconds(5)) == .newest)
        #expect(pacer.nextSlot == .milliseconds(45))
        pacer.arrived(at: .milliseconds(30))
        #expect(pacer.slot(at: .milliseconds(44)) == nil)  // not due yet
        #expect(pacer.slot(at: .milliseconds(45)) == .newest)
        #expect((pacer.sent, pacer.dropped, pacer.repeated) == (2, 0, 0))
    }

    @Test func aFasterWriterHasItsOlderPicturesDropped() {
        var pacer = VideoFramePacer(period: period)
        pacer.arrived(at: .zero)
        _ = pacer.slot(at: .zero)
        for index in 1...3 { pacer.arrived(at: .milliseconds(index * 10)) }  // three within one period
        #expect(pacer.slot(at: .milliseconds(40)) == .newest)
        #expect((pacer.received, pacer.sent, pacer.dropped) == (4, 2, 2))
    }

    @Test func aSlowerWriterHasItsLastPictureRepeated() {
        var pacer = VideoFramePacer(period: period)
        pacer.arrived(at: .zero)
        _ = pacer.slot(at: .zero)
        #expect(pacer.slot(at: .milliseconds(40)) == .repeatLast)
        #expect(pacer.slot(at: .milliseconds(80)) == .repeatLast)
        pacer.arrived(at: .milliseconds(100))
        #expect(pacer.slot(at: .milliseconds(120)) == .newest)
        #expect((pacer.sent, pacer.repeated, pacer.dropped) == (4, 2, 0))
    }

    @Test func slotsMissedByALateThreadAreNotMadeUp() {
        var pacer = VideoFramePacer(period: period)
        pacer.arrived(at: .zero)
        _ = pacer.slot(at: .zero)
        pacer.arrived(at: .milliseconds(10))
        // Woken 130 ms late: one picture now, the three slots passed are given up.
        #expect(pacer.slot(at: .milliseconds(170)) == .newest)
        #expect(pacer.missedSlots == 3)
        #expect(pacer.nextSlot == .milliseconds(210))
        #expect(pacer.slot(at: .milliseconds(209)) == nil)
    }
}
