public import RoutingModel
public import Transport

/// A TV, speaker or other device that an extension found and can route media to.
///
/// Use a stable ``id`` derived from the protocol's own device identity (a UDN,
/// a Bluetooth address) so that the same physical device keeps its id across
/// discoveries. Devices reported by different extensions are shown once by the
/// system, with both protocols, when their ``identifiers`` meet (or, as a last
/// resort, when they share a display name and type and no identifier differs).
public struct MediaOutputDevice: Sendable, Hashable, Identifiable {
    /// What the device can do (the vocabulary apps share: ``OutputDeviceDescription``).
    public typealias Capabilities = OutputDeviceDescription.Capabilities
    /// What kind of device this is.
    public typealias DeviceType = OutputDeviceDescription.DeviceType
    /// How the device's volume can be controlled.
    public typealias VolumeControl = OutputDeviceDescription.VolumeControl
    /// How a person proves they may use the device.
    public typealias AuthorizationMethod = OutputDeviceDescription.AuthorizationMethod

    public let id: String
    public var displayName: String
    public var capabilities: Capabilities
    public var deviceType: DeviceType
    public var volumeControl: VolumeControl
    public var canMute: Bool
    /// How to reach the device; the transports' endpoints.
    public var requiredNetworkEndpoints: [Endpoint]
    /// Why the device is listed but cannot be activated now (a Wi-Fi Display sink before
    /// mirroring exists, a device in setup mode); nil when it can be.
    public var unavailableReason: String?

    /// The identities of the physical device, from its endpoints (UDN, MAC, Bluetooth
    /// and IP addresses): the routing system merges devices of different protocols by them.
    public var identifiers: Set<DeviceIdentifier> {
        requiredNetworkEndpoints.reduce(into: []) { $0.formUnion($1.allIdentifiers) }
    }

    /// Whether the device can be activated now.
    public var isAvailable: Bool { unavailableReason == nil }

    /// A device; nil when `id` or `displayName` is empty.
    public init?(
        id: String,
        displayName: String,
        capabilities: Capabilities,
        deviceType: DeviceType = .unknown,
        volumeControl: VolumeControl = .none,
        canMute: Bool = false,
        requiredNetworkEndpoints: [Endpoint] = [],
        unavailableReason: String? = nil
    ) {
        guard !id.isEmpty, !displayName.trimmingSpaces.isEmpty else { return nil }
        self.unavailableReason = unavailableReason
        self.id = id
        self.displayName = displayName
        self.capabilities = capabilities
        self.deviceType = deviceType
        self.volumeControl = volumeControl
        self.canMute = canMute
        self.requiredNetworkEndpoints = requiredNetworkEndpoints
    }
}

extension OutputDeviceDescription {
    /// What apps see of `device`: everything but how to reach it.
    public init(_ device: MediaOutputDevice) {
        self.init(
            validatedID: device.id, displayName: device.displayName, capabilities: device.capabilities,
            deviceType: device.deviceType, volumeControl: device.volumeControl, canMute: device.canMute,
            unavailableReason: device.unavailableReason)
    }
}
