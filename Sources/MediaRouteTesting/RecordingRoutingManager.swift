public import MediaDevice
import RoutingModel
import Synchronization

/// A routing manager for an extension under test: it records every report the
/// extension makes, in order, and lets the test wait for the one it expects, as the
/// system would receive them (swift-nio's `NIOTestUtils`, for MediaRoute extensions).
///
///     let recorder = RecordingRoutingManager()
///     let ext = MyExtension(routingManager: recorder.manager)
///     try await ext.startDiscovery()
///     let tv = try await recorder.foundDevice(named: "Living Room TV")
public final class RecordingRoutingManager: Sendable {
    private struct State {
        var events: [MediaDeviceRoutingEvent] = []
        var waiters: [(id: Int, matches: @Sendable (MediaDeviceRoutingEvent) -> Bool, continuation: CheckedContinuation<MediaDeviceRoutingEvent?, Never>)] = []
        var nextWaiter = 0
        /// Waits whose time ran out before they were registered.
        var expired: Set<Int> = []
    }

    private let state = Mutex(State())

    /// The manager to give the extension.
    public var manager: MediaDeviceRoutingManager {
        MediaDeviceRoutingManager { [self] event in record(event) }
    }

    public init() {}

    /// Every report so far, in the order the extension made them.
    public var events: [MediaDeviceRoutingEvent] { state.withLock { $0.events } }

    /// The devices the extension reports as present now: found (or updated) and not lost since.
    public var devices: [MediaOutputDevice] {
        var present: [MediaOutputDevice] = []
        for event in events {
            switch event {
            case .foundDevice(let device):
                present.removeAll { $0.id == device.id }
                present.append(device)
            case .updateDevices(let devices):
                for device in devices {
                    if let index = present.firstIndex(where: { $0.id == device.id }) { present[index] = device }
                }
            case .lostDevice(let device):
                present.removeAll { $0.id == device.id }
            default:
                continue
            }
        }
        return present
    }

    /// The first report, among those already made and those to come, for which
    /// `matches` holds; nil if none came within `limit`.
    public func first(
        within limit: Duration = .seconds(5), where matches: @escaping @Sendable (MediaDeviceRoutingEvent) -> Bool
    ) async -> MediaDeviceRoutingEvent? {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        let timeout = Task { [self] in
            try? await Task.sleep(for: limit)
            expire(id)
        }
        defer { timeout.cancel() }
        return await withCheckedContinuation { continuation in
            let found = state.withLock { state -> MediaDeviceRoutingEvent?? in
                if let event = state.events.first(where: matches) { return .some(event) }
                if state.expired.remove(id) != nil { return .some(nil) }
                state.waiters.append((id, matches, continuation))
                return .none
            }
            if let found { continuation.resume(returning: found) }
        }
    }

    /// The device whose display name is `name`, once the extension has found it.
    public func foundDevice(named name: String, within limit: Duration = .seconds(5)) async throws(RecordingError) -> MediaOutputDevice {
        let event = await first(within: limit) { event in
            if case .foundDevice(let device) = event { return device.displayName == name }
            return false
        }
        guard case .foundDevice(let device)? = event else { throw RecordingError("no device named \"\(name)\" was found within \(limit)") }
        return device
    }

    private func record(_ event: MediaDeviceRoutingEvent) {
        let resumed = state.withLock { state -> [CheckedContinuation<MediaDeviceRoutingEvent?, Never>] in
            state.events.append(event)
            let matching = state.waiters.filter { $0.matches(event) }
            state.waiters.removeAll { waiter in matching.contains { $0.id == waiter.id } }
            return matching.map(\.continuation)
        }
        for continuation in resumed { continuation.resume(returning: event) }
    }

    /// The wait `id` is over: resumed with nil now, or at once when it comes to wait.
    private func expire(_ id: Int) {
        let continuation = state.withLock { state -> CheckedContinuation<MediaDeviceRoutingEvent?, Never>? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else {
                state.expired.insert(id)
                return nil
            }
            return state.waiters.remove(at: index).continuation
        }
        continuation?.resume(returning: nil)
    }
}
