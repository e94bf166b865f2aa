#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
import RoutingModel
import Synchronization
import EventBroadcast

/// A bidirectional message channel: the route's (app ↔ extension) or a session's
/// (app ↔ application on the device).
public final class SystemRouteDataChannel: Sendable {
    private struct State {
        weak var delegate: (any SystemRouteDataDelegate)?
    }

    private let sender: @Sendable (Data) async throws -> Void
    private let state = Mutex(State())
    private let listeners = EventBroadcaster<Data>()

    init(sender: @escaping @Sendable (Data) async throws -> Void) {
        self.sender = sender
    }

    /// Receives incoming data; held weakly.
    public var dataDelegate: (any SystemRouteDataDelegate)? {
        get { state.withLock { $0.delegate } }
        set { state.withLock { $0.delegate = newValue } }
    }

    /// Sends data to the other end.
    /// - Throws: ``MediaDeviceError`` (deviceNotActive after the route or session ended).
    public func send(_ data: Data) async throws {
        guard !listeners.isClosed else {
            throw MediaDeviceError(.deviceNotActive, "the data channel is closed")
        }
        try await sender(data)
    }

    /// Incoming data as an async sequence (besides the delegate); ends when the channel closes.
    public func messages() -> AsyncStream<Data> {
        listeners.subscribe()
    }

    func deliver(_ data: Data) {
        let delegate = state.withLock { $0.delegate }
        delegate?.dataChannel(self, didReceive: data)
        listeners.yield(data)
    }

    func close() {
        listeners.close()
    }
}
