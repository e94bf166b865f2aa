import RAOP
import Testing

/// A resend request is 8 bytes from a spoofable address: what it makes us send is bounded.
@Suite struct ResendBudgetTests {
    static func request(first: UInt16, count: UInt16) -> ResendRequest {
        ResendRequest([0x80, 0xD5, 0x00, 0x01, UInt8(first >> 8), UInt8(first & 0xFF), UInt8(count >> 8), UInt8(count & 0xFF)])!
    }

    @Test func aFloodOfSpoofedRequestsGetsNoMoreThanTheBudget() {
        var budget = ResendBudget(packetsPerSecond: 32, burst: 64)
        var sent = 0
        var requestBytes = 0
        // 1 000 requests for 65 535 packets each, in one second.
        for index in 0..<1000 {
            sent += budget.allow(Self.request(first: UInt16(index % 200), count: .max), now: .milliseconds(index), isKept: { _ in true }).count
            requestBytes += 8
        }
        #expect(sent <= 64 + 32)
        #expect(budget.refused > 0)
        // Within the allowed multiple: at most 96 packets (~135 KB) for 8 000 bytes sent at us, and no
        // more however many requests come.
        #expect(sent * 1400 <= 20 * requestBytes)
    }

    @Test func aReceiverThatLostAFewPacketsGetsThemAtOnceButNotTheSameOneOverAndOver() {
        var budget = ResendBudget()
        let lost = budget.allow(Self.request(first: 65_534, count: 4), now: .seconds(1), isKept: { _ in true })
        let again = budget.allow(Self.request(first: 65_534, count: 1), now: .seconds(1) + .milliseconds(10), isKept: { _ in true })
        let third = budget.allow(Self.request(first: 65_534, count: 1), now: .seconds(1) + .milliseconds(20), isKept: { _ in true })
        // A second later it may be asked for again.
        let later = budget.allow(Self.request(first: 65_534, count: 1), now: .seconds(2) + .milliseconds(30), isKept: { _ in true })
        // Packets no longer kept are not sent and cost nothing.
        let gone = budget.allow(Self.request(first: 10, count: 64), now: .seconds(3), isKept: { $0 == 12 })
        #expect(lost == [65_534, 65_535, 0, 1])
        #expect(again == [65_534])
        #expect(third.isEmpty)
        #expect(later == [65_534])
        #expect(gone == [12])
    }
}

/// The event channel's budget: a burst, then a steady rate, by the time it is given.
@Suite struct EventChannelBudgetTests {
    @Test func aBurstThenTheRateAndTheAnsweredCount() {
        var budget = EventChannelBudget(requestsPerSecond: 8, burst: 32)
        let start = Duration.seconds(100)
        var allowed = 0
        for _ in 0..<40 where budget.allow(now: start) { allowed += 1 }
        #expect(allowed == 32, "the burst, then nothing at the same instant")
        let oneMore = budget.allow(now: start + .milliseconds(125))
        let another = budget.allow(now: start + .milliseconds(125))
        #expect(oneMore && !another, "one more an eighth of a second later")
        allowed = 0
        for _ in 0..<40 where budget.allow(now: start + .seconds(11)) { allowed += 1 }
        #expect(allowed == 32, "refilled to the burst, never beyond")
        #expect(budget.answered == 65)
    }
}
