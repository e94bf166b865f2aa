#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
public import RoutingModel
import Synchronization

/// One line of the picker.
public struct RoutePickerEntry: Sendable, Hashable, Identifiable {
    public let id: String
    /// The device's typed reference: picking activates by it, with no lookup by name.
    public let key: DeviceKey
    public let displayName: String
    public let deviceType: OutputDeviceDescription.DeviceType
    public let symbolName: String
    /// The display names of the protocols that reach the device, e.g. `["Loopback"]`.
    public let protocolDisplayNames: [String]
    public let state: ActivationState
    /// Why the device is listed but cannot be picked (nil: it can be).
    public let unavailableReason: String?
    /// Whether picking it can activate it.
    public var isAvailable: Bool { unavailableReason == nil }

    init?(_ device: SystemDevice) {
        guard let key = device.key else { return nil }
        self.key = key
        unavailableReason = device.unavailableReason
        id = device.id
        displayName = device.displayName
        deviceType = device.deviceType
        symbolName = device.deviceType.symbolName
        protocolDisplayNames = device.protocolDisplayNames
        state = device.state
    }
}
