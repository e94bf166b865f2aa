#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
public import RoutingModel
import Synchronization

/// The model behind a device picker (`mediaroutectl pick`, a UI): discovery runs
/// while it is open, and it lists devices, TVs first when asked.
public final class RoutePicker: Sendable {
    private let controller: SystemRouteController
    private let clientID: String
    private let open = Mutex(false)
    private let sortOrder: Mutex<Bool>

    init(controller: SystemRouteController, prioritizesVideoDevices: Bool) {
        self.controller = controller
        self.clientID = "picker-\(UUID().uuidString)"
        self.sortOrder = Mutex(prioritizesVideoDevices)
    }

    /// List video devices (TVs, set-top boxes) before audio-only ones.
    public var prioritizesVideoDevices: Bool {
        get { sortOrder.withLock { $0 } }
        set { sortOrder.withLock { $0 = newValue } }
    }

    /// Opens the picker: discovery runs until ``close()``.
    public func open() async {
        let wasOpen = open.withLock { open in
            defer { open = true }
            return open
        }
        if !wasOpen { await controller.beginDiscovery(client: clientID) }
    }

    /// Closes the picker; discovery stops when nothing else wants it.
    public func close() async {
        let wasOpen = open.withLock { open in
            defer { open = false }
            return open
        }
        if wasOpen { await controller.endDiscovery(client: clientID) }
    }

    /// The current entries, sorted.
    public func entries() async -> [RoutePickerEntry] {
        sorted(await controller.system.devicesList.compactMap(RoutePickerEntry.init))
    }

    /// The entries each time the device list changes, starting with the current list.
    ///
    /// The list is read once; after that each event's device is applied to it (found ones
    /// are added in the order found, updated ones replaced in place, lost ones removed),
    /// so a change costs no read of the whole list.
    public func updates() async -> AsyncStream<[RoutePickerEntry]> {
        let events = await controller.system.events()
        let (stream, continuation) = AsyncStream.makeStream(of: [RoutePickerEntry].self, bufferingPolicy: .bufferingNewest(1))
        var list = await controller.system.devicesList.compactMap(RoutePickerEntry.init)
        continuation.yield(sorted(list))
        let task = Task { [weak self] in
            for await event in events {
                switch event {
                case .deviceFound(let device), .deviceUpdated(let device):
                    guard let entry = RoutePickerEntry(device) else { continue }
                    if let index = list.firstIndex(where: { $0.id == entry.id }) {
                        guard list[index] != entry else { continue }
                        list[index] = entry
                    } else {
                        list.append(entry)
                    }
                case .deviceLost(let device):
                    guard let index = list.firstIndex(where: { $0.id == device.id }) else { continue }
                    list.remove(at: index)
                default:
                    continue
                }
                guard let self else { break }
                continuation.yield(self.sorted(list))
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// Activates the picked device.
    /// - Throws: ``MediaDeviceError/Code/unsupported`` for an entry that is listed as unavailable.
    public func pick(_ entry: RoutePickerEntry, features: OutputDeviceDescription.Capabilities = []) async throws -> SystemRoute {
        if let reason = entry.unavailableReason {
            throw MediaDeviceError(.unsupported, "\(entry.displayName) is unavailable: \(reason)")
        }
        return try await controller.activate(entry.key, features: features)
    }

    func sorted(_ entries: [RoutePickerEntry]) -> [RoutePickerEntry] {
        guard prioritizesVideoDevices else { return entries }
        let video = entries.filter { $0.deviceType.isVideo }
        let other = entries.filter { !$0.deviceType.isVideo }
        return video + other
    }
}

extension Sequence<RoutePickerEntry> {
    /// The entry `nameOrID` names, by the rule every device list follows (``DeviceNameMatching``).
    public func named(_ nameOrID: String) -> RoutePickerEntry? {
        DeviceNameMatching.first(in: self, named: nameOrID, id: \.id, displayName: \.displayName)
    }
}
