/// A device as the picker shows it: one entry per physical device, even when
/// several extensions report it (same display name, different protocols).
public struct SystemDevice: Sendable, Hashable, Identifiable {
    /// One protocol through which the device can be reached.
    public struct Member: Sendable, Hashable {
        public let protocolType: MediaSharingProtocol
        public let device: OutputDeviceDescription
        public let state: ActivationState

        public init(protocolType: MediaSharingProtocol, device: OutputDeviceDescription, state: ActivationState) {
            self.protocolType = protocolType
            self.device = device
            self.state = state
        }

        public var key: DeviceKey { DeviceKey(protocolID: protocolType.identifier, deviceID: device.id) }
    }

    /// Stable id of the merged entry: the key of the member that created it; it stays while any member remains.
    public let id: String
    public let displayName: String
    /// Members in extension load order.
    public let members: [Member]

    public init(id: String, displayName: String, members: [Member]) {
        self.id = id
        self.displayName = displayName
        self.members = members
    }

    /// The same entry under another name (a suffix that tells two same-named devices apart).
    public func renamed(_ name: String) -> SystemDevice {
        SystemDevice(id: id, displayName: name, members: members)
    }

    /// The typed reference to this entry: its first member's key. Any member's key
    /// names the entry (``SystemRoutingBackend/activate(_:protocolID:features:)``);
    /// nil only for an entry with no member, which no list shows.
    public var key: DeviceKey? { members.first?.key }

    /// Whether some member can be activated now.
    public var isAvailable: Bool { members.contains { $0.device.isAvailable } }

    /// Why no member can be activated (the first member's reason), or nil when one can.
    public var unavailableReason: String? {
        isAvailable ? nil : members.first?.device.unavailableReason
    }

    /// The device type of the first member that knows it.
    public var deviceType: OutputDeviceDescription.DeviceType {
        members.first { $0.device.deviceType != .unknown }?.device.deviceType ?? .unknown
    }

    /// Everything any member can do.
    public var capabilities: OutputDeviceDescription.Capabilities {
        members.reduce(into: []) { $0.formUnion($1.device.capabilities) }
    }

    /// The protocols' display names, in load order (e.g. `["Loopback", "UPnP/DLNA"]`).
    public var protocolDisplayNames: [String] { members.map(\.protocolType.displayName) }

    /// The most advanced activation state of any member.
    public var state: ActivationState {
        let ranking: [ActivationState] = [.active, .awaitingPairingCode, .activating, .deactivating]
        return ranking.first { rank in members.contains { $0.state == rank } } ?? .idle
    }
}
