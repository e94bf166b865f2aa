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
