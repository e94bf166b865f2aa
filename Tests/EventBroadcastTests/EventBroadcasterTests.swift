import EventBroadcast
import Testing

@Suite struct EventBroadcasterTests {
    @Test func everySubscriberGetsEveryEventInOrderAfterItsInitialOnes() async {
        let broadcaster = EventBroadcaster<Int>()
        let first = broadcaster.subscribe()
        let second = broadcaster.subscribe(startingWith: [-1, 0])
        for value in 1...3 { broadcaster.yield(value) }
        broadcaster.finish()
        #expect(await Array(first) == [1, 2, 3])
        #expect(await Array(second) == [-1, 0, 1, 2, 3])
        #expect(broadcaster.subscriberCount == 0)
    }

    @Test func droppingAStreamUnsubscribesAtOnce() async {
        let broadcaster = EventBroadcaster<Int>()
        var stream: AsyncStream<Int>? = broadcaster.subscribe()
        #expect(broadcaster.subscriberCount == 1)
        _ = stream
        stream = nil
        #expect(broadcaster.subscriberCount == 0)
        let task = Task { for await _ in broadcaster.subscribe() {} }
        while broadcaster.subscriberCount == 0 { await Task.yield() }
        task.cancel()
        await task.value
        #expect(broadcaster.subscriberCount == 0)
    }

    @Test func theBufferingPolicyBoundsASlowSubscriber() async {
        let broadcaster = EventBroadcaster<Int>(bufferingPolicy: .bufferingNewest(2))
        let stream = broadcaster.subscribe()
        for value in 1...100 { broadcaster.yield(value) }
        broadcaster.finish()
        #expect(await Array(stream) == [99, 100])
    }

    @Test func aSubscriberAfterFinishIsServed() async {
        let broadcaster = EventBroadcaster<String>()
        broadcaster.finish()
        let stream = broadcaster.subscribe()
        broadcaster.yield("late")
        broadcaster.finish()
        #expect(await Array(stream) == ["late"])
    }
}

@Suite struct ClosedBroadcasterTests {
    @Test func afterCloseNewSubscribersEndAtOnce() async {
        let broadcaster = EventBroadcaster<Int>()
        let before = broadcaster.subscribe()
        broadcaster.close()
        #expect(broadcaster.isClosed)
        broadcaster.yield(1)
        #expect(await Array(before) == [])
        #expect(await Array(broadcaster.subscribe(startingWith: [7])) == [])
        #expect(broadcaster.subscriberCount == 0)
    }
}

extension Array {
    init<S: AsyncSequence>(_ sequence: S) async where S.Element == Element, S.Failure == Never {
        var values: [Element] = []
        for await value in sequence { values.append(value) }
        self = values
    }
}
