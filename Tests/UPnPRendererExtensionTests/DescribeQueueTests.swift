@testable import UPnPRendererExtension
import Testing

/// SSDP announcements cost nothing to send; description fetches hold sockets. The queue keeps
/// the fetches to a few at once, one per host, whatever is announced.
@Suite struct DescribeQueueTests {
    typealias Job = DescribeQueue.Job

    @Test func aFloodOfAnnouncementsStartsAFewFetchesAtOnceOnePerHost() {
        var queue = DescribeQueue(concurrency: 4, maximumWaiting: 64, maximumWaitingPerHost: 4)
        // 1 000 made-up devices from 10 hosts, 100 each.
        var accepted = 0
        for index in 0..<1000 where queue.enqueue(Job(id: "uuid:\(index)", host: "198.51.100.\(index % 10)"), now: .seconds(1)) { accepted += 1 }
        #expect(accepted == 40)
        #expect(queue.refused["host has too many devices waiting"] == 960)
        var running: [Job] = []
        while let job = queue.next() { running.append(job) }
        #expect(running.count == 4)
        #expect(Set(running.map(\.host)).count == 4)
        // A fetch that fails pauses its host: its waiting devices are dropped and it is refused a while.
        queue.finished(running[0], failed: true, now: .seconds(2))
        #expect(queue.waitingCount == 33)
        let paused = queue.enqueue(Job(id: "uuid:new", host: running[0].host), now: .seconds(3))
        let afterPause = queue.enqueue(Job(id: "uuid:new", host: running[0].host), now: .seconds(40))
        #expect(!paused && afterPause)
        #expect(queue.next() != nil)
        #expect(queue.next() == nil)
        #expect(queue.runningCount == 4)
    }

    /// A device that answers SSDP before its web server (rygel while it starts) is asked
    /// again 2 s after a failed description, then 4, 8, 16 and at most 30 s after failures in a
    /// row; a success forgets them. A host that never answers costs one fetch per 30 s.
    @Test func failuresInARowPauseTheHostLongerUpToTheLimitAndASuccessForgetsThem() throws {
        var queue = DescribeQueue(concurrency: 1)
        let job = Job(id: "uuid:r", host: "192.0.2.9")
        var now = Duration.zero
        for expected in [2, 4, 8, 16, 30, 30] as [Int64] {
            let accepted = queue.enqueue(job, now: now)
            #expect(accepted)
            let running = queue.next()
            try #require(running != nil)
            queue.finished(running!, failed: true, now: now)
            let tooSoon = queue.enqueue(job, now: now + .seconds(expected) - .milliseconds(1))
            #expect(!tooSoon, "paused \(expected) s")
            now += .seconds(expected)
        }
        let again = queue.enqueue(job, now: now)
        #expect(again)
        let succeeding = queue.next()
        try #require(succeeding != nil)
        queue.finished(succeeding!, failed: false, now: now)
        // After the success, the next failure is a first one again.
        _ = queue.enqueue(job, now: now)
        let failing = queue.next()
        try #require(failing != nil)
        queue.finished(failing!, failed: true, now: now)
        let afterTwo = queue.enqueue(job, now: now + .seconds(2))
        #expect(afterTwo)
    }

    @Test func theNewestAnnouncementOfADeviceReplacesItsWaitingOne() {
        var queue = DescribeQueue(concurrency: 1)
        _ = queue.enqueue(Job(id: "a", host: "h1"), now: .zero)
        let first = queue.next()
        _ = queue.enqueue(Job(id: "b", host: "h1"), now: .zero)
        _ = queue.enqueue(Job(id: "b", host: "h2"), now: .zero)
        #expect(queue.waitingCount == 1)
        // The slot is busy: nothing starts until the first ends.
        #expect(queue.next() == nil)
        queue.finished(first!, failed: false, now: .zero)
        #expect(queue.next() == Job(id: "b", host: "h2"))
        queue.remove(id: "b")
        #expect(queue.started == 2)
    }

    @Test func theWaitListIsBoundedAcrossHosts() {
        var queue = DescribeQueue(concurrency: 4, maximumWaiting: 8, maximumWaitingPerHost: 4)
        let accepted = (0..<100).filter { queue.enqueue(Job(id: "\($0)", host: "10.0.0.\($0)"), now: .zero) }.count
        #expect(accepted == 8)
        #expect(queue.refused["describe queue full"] == 92)
    }
}
