@testable import MediaRouteExecutors
import Testing

@Suite struct JobQueueTests {
    @Test func readyJobsComeOutInArrivalOrder() {
        var queue = JobQueue<Int>()
        for value in 0..<2000 { queue.append(value) }
        var out: [Int] = []
        while let value = queue.next(at: MonotonicInstant(nanoseconds: 0)) { out.append(value) }
        #expect(out == Array(0..<2000))
        #expect(queue.isEmpty)
        queue.append(7)
        #expect(queue.next(at: MonotonicInstant(nanoseconds: 0)) == 7)
    }

    @Test func timersWaitForTheirDeadlineAndComeOutSoonestFirst() {
        var queue = JobQueue<Int>()
        let deadlines: [UInt64] = [50, 10, 40, 10, 30, 20, 10, 60]
        for (index, deadline) in deadlines.enumerated() { queue.append(index, at: MonotonicInstant(nanoseconds: deadline)) }
        #expect(queue.nextDeadline == MonotonicInstant(nanoseconds: 10))
        #expect(queue.next(at: MonotonicInstant(nanoseconds: 9)) == nil)
        // Equal deadlines keep their order of arrival.
        #expect(queue.next(at: MonotonicInstant(nanoseconds: 35)) == 1)
        #expect(queue.next(at: MonotonicInstant(nanoseconds: 35)) == 3)
        #expect(queue.next(at: MonotonicInstant(nanoseconds: 35)) == 6)
        #expect(queue.next(at: MonotonicInstant(nanoseconds: 35)) == 5)
        #expect(queue.next(at: MonotonicInstant(nanoseconds: 35)) == 4)
        #expect(queue.next(at: MonotonicInstant(nanoseconds: 35)) == nil)
        #expect(queue.nextDeadline == MonotonicInstant(nanoseconds: 40))
        #expect(!queue.isEmpty)
        var rest: [Int] = []
        while let value = queue.next(at: MonotonicInstant(nanoseconds: 100)) { rest.append(value) }
        #expect(rest == [2, 0, 7])
        #expect(queue.nextDeadline == nil)
    }

    @Test func aDueTimerGoesBeforeReadyJobs() {
        var queue = JobQueue<String>()
        queue.append("ready")
        queue.append("timer", at: MonotonicInstant(nanoseconds: 5))
        #expect(queue.next(at: MonotonicInstant(nanoseconds: 1)) == "ready")
        queue.append("ready again")
        #expect(queue.next(at: MonotonicInstant(nanoseconds: 5)) == "timer")
        #expect(queue.next(at: MonotonicInstant(nanoseconds: 5)) == "ready again")
    }

    @Test func randomDeadlinesComeOutSorted() {
        var generator = SystemRandomNumberGenerator()
        var queue = JobQueue<UInt64>()
        let deadlines = (0..<5000).map { _ in UInt64.random(in: 0..<1000, using: &generator) }
        for deadline in deadlines { queue.append(deadline, at: MonotonicInstant(nanoseconds: deadline)) }
        var out: [UInt64] = []
        while let value = queue.next(at: MonotonicInstant(nanoseconds: .max)) { out.append(value) }
        #expect(out == deadlines.sorted())
    }

    @Test func delaysBecomeMonotonicDeadlines() {
        let before = MonotonicInstant.now
        let later = MonotonicInstant.after(.milliseconds(250))
        #expect(later.nanoseconds >= before.nanoseconds + 250_000_000)
        #expect(MonotonicInstant.after(.seconds(-5)) >= before)
    }
}
