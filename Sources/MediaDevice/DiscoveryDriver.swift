import RoutingModel
import Synchronization
public import Transport

/// Runs one transport's discovery for an extension: `startDeviceDiscovery` starts
/// it (once, however often it is called), `stopDeviceDiscovery` stops it, and each
/// event goes to the extension in the order the transport reported it. When the
/// transport's stream ends by itself (a failed discovery), the driver is idle
/// again, so the next start begins a fresh discovery.
public final class DiscoveryDriver: Sendable {
    private struct State {
        var task: Task<Void, Never>?
        /// Tells a stream that ended by itself from one replaced since.
        var generation = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Whether a discovery is under way.
    public var isRunning: Bool { state.withLock { $0.task != nil } }

    /// Starts iterating `transport.discover()` unless a discovery is under way; `handle`
    /// gets each event (an extension passes `{ await self.handle($0) }`).
    public func start(_ transport: any Transport, handle: @escaping @Sendable (DiscoveryEvent) async -> Void) {
        state.withLock { state in
            guard state.task == nil else { return }
            state.generation += 1
            let generation = state.generation
            let events = transport.discover()
            state.task = Task { [weak self] in
                for await event in events {
                    if Task.isCancelled { break }
                    await handle(event)
                }
                self?.ended(generation)
            }
        }
    }

    /// Stops the discovery under way, if any; the transport stops when its stream is let go.
    public func stop() {
        state.withLock { state in
            state.task?.cancel()
            state.task = nil
        }
    }

    private func ended(_ generation: Int) {
        state.withLock { state in
            if state.generation == generation { state.task = nil }
        }
    }

    deinit {
        state.withLock { $0.task?.cancel() }
    }
}
