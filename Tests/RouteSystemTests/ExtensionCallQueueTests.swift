import Synchronization
import Testing

@testable import RouteSystem

/// Calls into an extension keep the order the routing system made them in (#38 item 3): one
/// queue per extension instead of a detached task per call.
@Suite(.timeLimit(.minutes(1))) struct ExtensionCallQueueTests {
    /// What the calls did, in the order they ran.
    final class Log: Sendable {
        private let entries = Mutex<[Int]>([])
        func append(_ value: Int) { entries.withLock { $0.append(value) } }
        var values: [Int] { entries.withLock { $0 } }
    }

    @Test func enqueuedAndAwaitedCallsRunOneAtATimeInTheOrderAskedEvenWhenEachSuspends() async {
        let queue = ExtensionCallQueue()
        let log = Log()
        for index in 0..<200 {
            if index % 10 == 9 {
                // A call whose answer the caller waits for runs after everything asked before it.
                let answer = await queue.perform { () -> Int in
                    log.append(index)
                    return index * 2
                }
                #expect(answer == index * 2)
                #expect(log.values.count == index + 1, "everything before \(index) ran first")
            } else {
                // Each call suspends a different number of times: without the queue, later
                // short ones would overtake earlier long ones.
                queue.enqueue {
                    for _ in 0..<(200 - index) % 7 { await Task.yield() }
                    log.append(index)
                }
            }
        }
        await queue.finish()
        #expect(log.values == Array(0..<200))
    }

    @Test func aCallAfterTheQueueFinishedStillRunsAndAnswers() async {
        let queue = ExtensionCallQueue()
        await queue.finish()
        #expect(await queue.perform { 42 } == 42)
    }
}
