import Synchronization

/// Hands every event to every subscriber, each through its own `AsyncStream`: the one
/// observer list of the package (the routing system, the D-Bus client, playback controls,
/// Now Playing, adapters), so subscribing, unsubscribing and finishing behave the same
/// everywhere.
///
/// A subscriber unsubscribes by dropping or cancelling its stream; that removes it at once,
/// under the lock, without a task hop. Events are yielded outside the lock, so a slow
/// subscriber never blocks a publisher (its stream's buffering policy decides what it keeps).
public final class EventBroadcaster<Event: Sendable>: Sendable {
    private struct Subscribers {
        var continuations = ObserverTable<AsyncStream<Event>.Continuation>()
        var closed = false
    }

    private let subscribers = Mutex(Subscribers())
    private let bufferingPolicy: AsyncStream<Event>.Continuation.BufferingPolicy

    /// - Parameter bufferingPolicy: what each subscriber's stream keeps while it is not read.
    public init(bufferingPolicy: AsyncStream<Event>.Continuation.BufferingPolicy = .unbounded) {
        self.bufferingPolicy = bufferingPolicy
    }

    deinit {
        for continuation in subscribers.withLock({ $0.continuations.removeAll() }) { continuation.finish() }
    }

    /// A stream of every event from now on, after `initial` (e.g. the current state), with
    /// nothing published in between lost or put before it.
    public func subscribe(startingWith initial: [Event] = []) -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: bufferingPolicy)
        let id = subscribers.withLock { subscribers -> UInt64? in
            guard !subscribers.closed else { return nil }
            let id = subscribers.continuations.add(continuation)
            // Under the lock, so a concurrent yield lands after the initial events.
            for event in initial { continuation.yield(event) }
            return id
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.continuations.remove(id) }
        }
        return stream
    }

    /// Hands `event` to every current subscriber.
    public func yield(_ event: Event) {
        for continuation in subscribers.withLock({ Array($0.continuations.all) }) { continuation.yield(event) }
    }

    /// Ends every current subscriber's stream; later subscribers are served as usual.
    public func finish() {
        end(closing: false)
    }

    /// Ends every subscriber's stream for good: a later subscriber's stream ends at once
    /// (a closed channel, an ended route).
    public func close() {
        end(closing: true)
    }

    /// Whether ``close()`` was called.
    public var isClosed: Bool { subscribers.withLock { $0.closed } }

    private func end(closing: Bool) {
        let ended = subscribers.withLock { subscribers in
            if closing { subscribers.closed = true }
            return subscribers.continuations.removeAll()
        }
        for continuation in ended { continuation.finish() }
    }

    /// How many streams are subscribed now.
    public var subscriberCount: Int { subscribers.withLock { $0.continuations.count } }
}
