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
        // Half a period off the writer's pace: a picture a little late for 45 ms is still in time.
        #expect(pacer.nextSlot == .milliseconds(65))
        pacer.arrived(at: .milliseconds(50))
        #expect(pacer.slot(at: .milliseconds(64)) == nil)  // not due yet
        #expect(pacer.slot(at: .milliseconds(65)) == .newest)
        #expect(pacer.nextSlot == .milliseconds(105))
        #expect((pacer.sent, pacer.dropped, pacer.repeated) == (2, 0, 0))
    }

    @Test func aFasterWriterHasItsOlderPicturesDropped() {
        var pacer = VideoFramePacer(period: period)
        pacer.arrived(at: .zero)
        _ = pacer.slot(at: .zero)
        for index in 1...3 { pacer.arrived(at: .milliseconds(index * 15)) }  // three before the next slot
        #expect(pacer.slot(at: .milliseconds(60)) == .newest)
        #expect((pacer.received, pacer.sent, pacer.dropped) == (4, 2, 2))
    }

    @Test func aSlowerWriterHasItsLastPictureRepeated() {
        var pacer = VideoFramePacer(period: period)
        pacer.arrived(at: .zero)
        _ = pacer.slot(at: .zero)
        #expect(pacer.slot(at: .milliseconds(60)) == .repeatLast)
        #expect(pacer.slot(at: .milliseconds(100)) == .repeatLast)
        pacer.arrived(at: .milliseconds(120))
        #expect(pacer.slot(at: .milliseconds(140)) == .newest)
        #expect((pacer.sent, pacer.repeated, pacer.dropped) == (4, 2, 0))
    }

    @Test func slotsMissedByALateThreadAreNotMadeUp() {
        var pacer = VideoFramePacer(period: period)
        pacer.arrived(at: .zero)
        _ = pacer.slot(at: .zero)
        pacer.arrived(at: .milliseconds(10))
        // Due at 60, woken at 170: one picture now, the two slots passed (100, 140) are given up.
        #expect(pacer.slot(at: .milliseconds(170)) == .newest)
        #expect(pacer.missedSlots == 2)
        #expect(pacer.nextSlot == .milliseconds(210))
        #expect(pacer.slot(at: .milliseconds(209)) == nil)
    }
}
