import Synchronization

/// The events of one discovery, in order, for one consumer: what
/// ``Transport/discover()`` returns.
///
/// It behaves as an unbounded `AsyncStream<DiscoveryEvent>` does — the same
/// `makeStream()`, `yield`, `finish` and `onTermination`; iteration ends after
/// `finish()`, when the consuming task is cancelled, or when every copy of the
/// sequence and its iterator is gone, and then `onTermination` runs once — but
/// it is written for this one element type. `AsyncStream` is generic code in
/// the standard library that Swift cannot specialise: every event went through
/// metadata look-ups and value witnesses, 1.2 µs per event on a warm cache
/// against 0.1 µs here, which was a tenth of the CPU a BlueZ scan spends per
/// device (Docs/benchmarks.md, issue 5).
public struct DiscoveryEvents: AsyncSequence, Sendable {
    public typealias Element = DiscoveryEvent
    public typealias Failure = Never

    /// Why the sequence ended, as `AsyncStream.Continuation.Termination`.
    public enum Termination: Sendable {
        /// The producer called ``Continuation/finish()``.
        case finished
        /// The consumer stopped: its task was cancelled or it let go of the sequence.
        case cancelled
    }

    /// What ``Continuation/yield(_:)`` did with an event.
    public enum YieldResult: Sendable, Equatable {
        /// Kept for the consumer, with this many events now waiting (including it).
        case enqueued(remaining: Int)
        /// Dropped: the sequence had ended.
        case terminated
    }

    /// The producer's side.
    public struct Continuation: Sendable {
        fileprivate let channel: Channel

        /// Hands `event` to the consumer (resuming it if it waits); dropped once the sequence ended.
        @discardableResult
        public func yield(_ event: DiscoveryEvent) -> YieldResult { channel.yield(event) }

        /// Ends the sequence after the events already yielded.
        public func finish() { channel.end(.finished) }

        /// Called once when the sequence ends, from whichever side ended it,
        /// with no lock held; set when it has already ended, it runs at once.
        public var onTermination: (@Sendable (Termination) -> Void)? {
            get { channel.onTermination }
            nonmutating set { channel.onTermination = newValue }
        }
    }

    /// The consumer's hold on the channel: when the last copy of the sequence
    /// and of its iterators is gone, nobody can read any more and the producer
    /// is told (as `AsyncStream` does).
    fileprivate final class Consumer: Sendable {
        let channel: Channel
        init(_ channel: Channel) { self.channel = channel }
        deinit { channel.end(.cancelled) }
    }

    private let consumer: Consumer

    private init(channel: Channel) {
        consumer = Consumer(channel)
    }

    /// A sequence and the continuation that feeds it.
    public static func makeStream() -> (stream: DiscoveryEvents, continuation: Continuation) {
        let channel = Channel()
        return (DiscoveryEvents(channel: channel), Continuation(channel: channel))
    }

    /// A sequence fed by `build`, called at once with its continuation.
    public init(_ build: (Continuation) -> Void) {
        let channel = Channel()
        self.init(channel: channel)
        build(Continuation(channel: channel))
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(consumer: consumer) }

    /// Reads the events; one task at a time.
    public struct AsyncIterator: AsyncIteratorProtocol {
        fileprivate let consumer: Consumer

        public nonisolated(nonsending) mutating func next() async -> DiscoveryEvent? {
            await consumer.channel.next()
        }
    }
}

extension DiscoveryEvents {
    /// The buffer between producer and consumer.
    fileprivate final class Channel: Sendable {
        private struct State {
            /// Events not read yet start at `head` (no shifting per event read).
            var buffer: [DiscoveryEvent] = []
            var head = 0
            /// The consumer, when it waits for an event.
            var waiter: UnsafeContinuation<DiscoveryEvent?, Never>?
            /// Set once: no more events are taken; those buffered are still read after `.finished`.
            var ended: Termination?
            var onTermination: (@Sendable (Termination) -> Void)?

            mutating func take() -> DiscoveryEvent? {
                guard head < buffer.count else { return nil }
                let event = buffer[head]
                head += 1
                if head == buffer.count {
                    buffer.removeAll(keepingCapacity: buffer.count <= 1024)
                    head = 0
                }
                return event
            }
        }

        private let state = Mutex(State())

        var onTermination: (@Sendable (Termination) -> Void)? {
            get { state.withLock { $0.onTermination } }
            set {
                let runNow: (@Sendable (Termination) -> Void, Termination)? = state.withLock { state in
                    guard let ended = state.ended else {
                        state.onTermination = newValue
                        return nil
                    }
                    return newValue.map { ($0, ended) }
                }
                if let (handler, reason) = runNow { handler(reason) }
            }
        }

        func yield(_ event: DiscoveryEvent) -> YieldResult {
            enum Outcome {
                case resume(UnsafeContinuation<DiscoveryEvent?, Never>)
                case result(YieldResult)
            }
            let outcome: Outcome = state.withLock { state in
                if state.ended != nil { return .result(.terminated) }
                if let waiter = state.waiter {
                    state.waiter = nil
                    return .resume(waiter)
                }
                state.buffer.append(event)
                return .result(.enqueued(remaining: state.buffer.count - state.head))
            }
            switch outcome {
            case .resume(let waiter):
                waiter.resume(returning: event)
                return .enqueued(remaining: 1)
            case .result(let result):
                return result
            }
        }

        /// Ends the sequence (the first reason wins): wakes a waiting consumer,
        /// drops the buffer if the consumer went away, runs `onTermination` once.
        func end(_ reason: Termination) {
            let (waiter, handler, dropped) = state.withLock { state -> (UnsafeContinuation<DiscoveryEvent?, Never>?, (@Sendable (Termination) -> Void)?, [DiscoveryEvent]) in
                guard state.ended == nil else { return (nil, nil, []) }
                state.ended = reason
                var dropped: [DiscoveryEvent] = []
                if reason == .cancelled {
                    swap(&dropped, &state.buffer)
                    state.head = 0
                }
                defer {
                    state.waiter = nil
                    state.onTermination = nil
                }
                return (state.waiter, state.onTermination, dropped)
            }
            // Released here, not with the lock held (an event's last reference may run arbitrary deinits).
            _ = dropped
            waiter?.resume(returning: nil)
            handler?(reason)
        }

        nonisolated(nonsending) func next() async -> DiscoveryEvent? {
            // The usual case in a burst: an event is waiting, so no suspension and no cancellation record.
            let ready: DiscoveryEvent?? = state.withLock { state in
                if let event = state.take() { return .some(event) }
                return state.ended != nil ? .some(nil) : nil
            }
            if let ready {
                guard Task.isCancelled else { return ready }
                end(.cancelled)
                return nil
            }
            return await withTaskCancellationHandler {
                await withUnsafeContinuation { (continuation: UnsafeContinuation<DiscoveryEvent?, Never>) in
                    let ready: DiscoveryEvent?? = state.withLock { state in
                        if let event = state.take() { return .some(event) }
                        if state.ended != nil { return .some(nil) }
                        precondition(state.waiter == nil, "DiscoveryEvents is read by one task at a time")
                        state.waiter = continuation
                        return nil
                    }
                    if let ready { continuation.resume(returning: ready) }
                }
            } onCancel: {
                end(.cancelled)
            }
        }
    }
}
