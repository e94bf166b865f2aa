/// The calls the routing system makes into one extension, made one after another in the
/// order they were asked for.
///
/// An extension is an actor, but awaiting it from several places, or from a detached task
/// per call, lets a later call (a deactivation) run before an earlier one (the activation it
/// ends): actor calls are not queued in the order they were made. Every call into an
/// extension goes through its queue instead: `enqueue` for what the system does not wait on
/// (the extension reports back through its routing manager), `perform` for what it needs
/// the answer of. Both keep the order of their callers on the routing system's actor.
final class ExtensionCallQueue: Sendable {
    typealias Call = @Sendable () async -> Void

    private let continuation: AsyncStream<Call>.Continuation
    private let worker: Task<Void, Never>

    init() {
        let (calls, continuation) = AsyncStream.makeStream(of: Call.self)
        self.continuation = continuation
        worker = Task {
            for await call in calls { await call() }
        }
    }

    deinit {
        continuation.finish()
    }

    /// Runs `call` after every call enqueued before it; returns at once.
    func enqueue(_ call: @escaping Call) {
        continuation.yield(call)
    }

    /// Runs `call` after every call enqueued before it and returns what it returned.
    func perform<Value: Sendable>(_ call: @escaping @Sendable () async -> Value) async -> Value {
        await withCheckedContinuation { (result: CheckedContinuation<Value, Never>) in
            let enqueued = continuation.yield { result.resume(returning: await call()) }
            if case .terminated = enqueued {
                // After `finish`, a call still runs, on its own: nothing is left to order it after.
                Task { result.resume(returning: await call()) }
            }
        }
    }

    /// Takes no more calls; the ones enqueued still run. Returns once they have.
    func finish() async {
        continuation.finish()
        await worker.value
    }
}
