import IPNetwork
import Testing

@Suite struct SourceRateBudgetTests {
    static func budget(overall: SourceRateBudget.Rate = .init(perSecond: 1000, burst: 1000)) -> SourceRateBudget {
        SourceRateBudget(perSource: .init(perSecond: 10, burst: 10), overall: overall, maximumSources: 8)
    }

    @Test func aSourceGetsItsBurstThenItsRate() {
        var budget = Self.budget()
        #expect((0..<20).filter { _ in budget.spend(1, by: "a", now: .seconds(1)) }.count == 10)
        let tooSoon = budget.spend(1, by: "a", now: .seconds(1) + .milliseconds(50))
        let refilled = budget.spend(1, by: "a", now: .seconds(1) + .milliseconds(200))
        // Another source is not held back by the first.
        let other = budget.spend(1, by: "b", now: .seconds(1))
        #expect(!tooSoon && refilled && other)
    }

    @Test func spoofedSourcesBeyondTheTableShareOneOverflowBucket() {
        var budget = Self.budget()
        let granted = (0..<100).filter { budget.spend(1, by: "s\($0)", now: .seconds(2)) }.count
        #expect(budget.trackedSources == 8)
        // One datagram from each of eight tracked sources, then one shared overflow burst of 10.
        #expect(granted == 8 + 10)
        // Once the tracked ones are idle (refilled) they are forgotten to make room.
        let newcomer = budget.spend(1, by: "new", now: .seconds(10))
        #expect(newcomer && budget.trackedSources == 1)
    }

    @Test func allSourcesTogetherNeverGetMoreThanTheOverallRate() {
        var budget = Self.budget(overall: .init(perSecond: 5, burst: 5))
        #expect((0..<50).filter { budget.spend(1, by: "s\($0 % 4)", now: .seconds(1)) }.count == 5)
        let atOnce = budget.spend(1, by: "fresh", now: .seconds(1))
        let later = budget.spend(1, by: "fresh", now: .seconds(2))
        #expect(!atOnce && later)
    }
}
