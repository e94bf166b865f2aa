import IOReactor
import Synchronization

/// Calls sent and waiting for their reply, by serial, each with a timer on the
/// ``IOReactor`` that fails it when its time is up. Both connection kinds keep their
/// calls here.
///
/// Whoever takes a call from the table resumes it, so a reply, a timeout and a closed
/// connection racing for the same call resume it once.
final class DBusPendingCalls: Sendable {
    typealias Key = UInt32

    /// A call taken from the table: the caller to resume and what to run first with a reply.
    struct Call: Sendable {
        let continuation: CheckedContinuation<DBusMessage, any Error>
        /// Called with a successful reply's body before the caller resumes.
        let replyHandler: (@Sendable ([DBusValue]) -> Void)?
        fileprivate let timer: IOTimer
    }

    private struct State {
        var calls: [Key: Call] = [:]
        var closed = false
    }

    private let state = Mutex(State())
    private let reactor: IOReactor

    init(reactor: IOReactor) {
        self.reactor = reactor
    }

    /// Whether no call waits.
    var isEmpty: Bool { state.withLock { $0.calls.isEmpty } }

    /// Adds a call that fails with a timeout (`what`) unless its reply comes within
    /// `timeout`; false (and nothing added) once the table is closed.
    func add(
        _ key: Key, _ continuation: CheckedContinuation<DBusMessage, any Error>,
        replyHandler: (@Sendable ([DBusValue]) -> Void)?, timeout: Duration, what: String
    ) -> Bool {
        guard !state.withLock({ $0.closed }) else { return false }
        let timer = reactor.schedule(at: reactor.now + timeout) { [weak self] in
            self?.take(key)?.continuation.resume(throwing: DBusError.timeout(what))
        }
        let added = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.calls[key] = Call(continuation: continuation, replyHandler: replyHandler, timer: timer)
            return true
        }
        if !added { timer.cancel() }
        return added
    }

    /// Takes the call `key` (its reply came, or it failed): nil if it is no longer waiting.
    @discardableResult
    func take(_ key: Key) -> Call? {
        guard let call = state.withLock({ $0.calls.removeValue(forKey: key) }) else { return nil }
        call.timer.cancel()
        return call
    }

    /// Fails every waiting call with `error` and takes no more.
    func close(failingWith error: DBusError) {
        let calls = state.withLock { state in
            state.closed = true
            defer { state.calls.removeAll() }
            return Array(state.calls.values)
        }
        for call in calls {
            call.timer.cancel()
            call.continuation.resume(throwing: error)
        }
    }
}
