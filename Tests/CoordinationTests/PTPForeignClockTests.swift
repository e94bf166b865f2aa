import PTP
import Testing
@testable import Coordination

/// A receiver's grandmaster clock as the box measures it, on forged and replayed halves.
@Suite struct PTPForeignClockTests {
    static func clock() -> PTPForeignClock {
        PTPForeignClock(announce: PTPAnnounce(priority1: 0, grandmaster: 0x1111), source: PTPPortIdentity(clock: 0x1111), lastAnnounce: .seconds(10))
    }

    /// Its time is `offset` ahead of ours and each Sync takes `delay` (µs) to come: a Sync at `at`.
    static func sync(_ clock: inout PTPForeignClock, _ sequence: UInt16, at: Duration, offset: Duration, delayMicroseconds delay: Int64) {
        clock.syncArrived(sequence, at: at)
        clock.followUp(sequence, preciseOrigin: PTPTimestamp(at + offset - .microseconds(delay)), now: at + .milliseconds(1))
    }

    @Test func theLeastDelayedSyncEachWayGivesTheOffsetAndAForgedTimeFarOffDoesNotMoveIt() {
        var clock = Self.clock()
        let offset = Duration.seconds(5_000)
        for (index, delay) in [300, 250, 400, 200, 350, 500].enumerated() {
            Self.sync(&clock, UInt16(index), at: .seconds(11) + .milliseconds(125 * index), offset: offset, delayMicroseconds: Int64(delay))
        }
        // Without the other way yet: its time less the least delay (200 µs).
        #expect(clock.offset == PTPForeignClock.nanoseconds(offset - .microseconds(200)))
        // A Sync and Follow_Up in its name with a time a second ahead, and one far beyond any
        // clock (Int64's edge), taken as samples: neither is plausible beside the others.
        Self.sync(&clock, 40, at: .seconds(12), offset: offset + .seconds(1), delayMicroseconds: 0)
        clock.syncArrived(41, at: .seconds(12))
        clock.followUp(41, preciseOrigin: PTPTimestamp(seconds: UInt64(Int64.max / 1_000_000_000), nanoseconds: 999_999_999), now: .seconds(12))
        #expect(clock.offset == PTPForeignClock.nanoseconds(offset - .microseconds(200)))
        // Within the spread a path's delay may have, the least delayed still counts.
        Self.sync(&clock, 42, at: .seconds(13), offset: offset, delayMicroseconds: 100)
        #expect(clock.offset == PTPForeignClock.nanoseconds(offset - .microseconds(100)))
    }

    @Test func aSecondHalfLongAfterItsFirstOrWithoutOneIsDropped() {
        var clock = Self.clock()
        let offset = Duration.seconds(5_000)
        Self.sync(&clock, 1, at: .seconds(11), offset: offset, delayMicroseconds: 300)
        // A Follow_Up replayed two seconds later, for a Sync of that sequence that came then.
        clock.syncArrived(2, at: .seconds(12))
        clock.followUp(2, preciseOrigin: PTPTimestamp(.seconds(12) + offset), now: .seconds(12) + PTPForeignClock.pendingLifetime + .milliseconds(1))
        // A Follow_Up whose Sync never came.
        clock.followUp(3, preciseOrigin: PTPTimestamp(.seconds(12) + offset), now: .seconds(12))
        #expect(clock.offset == PTPForeignClock.nanoseconds(offset - .microseconds(300)))
        #expect(!clock.isSettled)
        // The other way: a Delay_Resp within the lifetime counts, a late one does not.
        clock.delayRequestSent(9, at: .seconds(14))
        clock.delayResponse(9, received: PTPTimestamp(.seconds(14) + offset + .microseconds(300)), now: .seconds(14) + .milliseconds(2))
        #expect(clock.isSettled && clock.offset == PTPForeignClock.nanoseconds(offset))
        clock.delayRequestSent(10, at: .seconds(15))
        clock.delayResponse(10, received: PTPTimestamp(.seconds(15) + offset - .milliseconds(5)), now: .seconds(17))
        #expect(clock.offset == PTPForeignClock.nanoseconds(offset))
    }

    @Test func plausibleSamplesAreThoseNearTheirMedianAndFewAreAllKept() {
        #expect(PTPForeignClock.plausible([]) == [])
        #expect(PTPForeignClock.plausible([1, .max]) == [1, .max])
        #expect(PTPForeignClock.plausible([.min, 0, 5, .max]) == [0, 5])
        let spread = PTPForeignClock.plausibleSpread
        #expect(PTPForeignClock.plausible([0, spread, spread + 1, -spread, -spread - 1]) == [0, spread, -spread])
    }
}
