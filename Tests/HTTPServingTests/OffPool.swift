import Foundation

/// Runs blocking socket I/O on a thread of its own. The server answers through Swift
/// concurrency (its handler is async): blocking the cooperative pool's threads — two on a
/// two-core box, so two tests doing it at once — would leave none to answer them.
func offPool<Result: Sendable>(_ body: @escaping @Sendable () -> Result) async -> Result {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: body()) }
    }
}
