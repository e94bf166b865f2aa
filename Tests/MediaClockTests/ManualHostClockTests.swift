import MediaClock
import Testing

@Suite struct ManualHostClockTests {
    @Test func sleepersWakeInDeadlineOrderOnlyWhenTimeReachesThem() async throws {
        let clock = ManualHostClock()
        let order = OrderLog()
        let late = Task { try await clock.sleep(until: .seconds(2)); await order.append("late") }
        let early = Task { try await clock.sleep(until: .seconds(1)); await order.append("early") }
        while clock.sleeperCount < 2 { await Task.yield() }

        clock.advance(by: .milliseconds(500))
        try await Task.sleep(for: .milliseconds(5))
        #expect(await order.entries.isEmpty)

        clock.advance(to: .seconds(1))
        try await early.value
        #expect(await order.entries == ["early"])

        clock.advance(by: .seconds(5))
        try await late.value
        #expect(await order.entries == ["early", "late"])
        #expect(clock.now() == .seconds(6))
    }

    @Test func cancellationEndsASleepWithoutLeavingASleeper() async throws {
        let clock = ManualHostClock()
        let task = Task { try await clock.sleep(for: .seconds(10)) }
        while clock.sleeperCount == 0 { await Task.yield() }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(clock.sleeperCount == 0)
    }

    @Test func aPastDeadlineReturnsAtOnceAndTimeNeverGoesBack() async throws {
        let clock = ManualHostClock(now: .seconds(5))
        try await clock.sleep(until: .seconds(1))
        clock.advance(to: .seconds(2))
        #expect(clock.now() == .seconds(5))
    }

    @Test func durationSecondsRoundTrip() {
        #expect(Duration.seconds(double: 1.25).seconds == 1.25)
        #expect(Duration.milliseconds(-1500).seconds == -1.5)
    }

    @Test func systemClockIsMonotonic() async throws {
        let clock = SystemHostClock()
        let before = clock.now()
        try await clock.sleep(for: .milliseconds(2))
        #expect(clock.now() - before >= .milliseconds(2))
    }
}

actor OrderLog {
    var entries: [String] = []
    func append(_ entry: String) { entries.append(entry) }
}
