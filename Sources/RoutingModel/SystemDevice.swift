#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import MediaDevice

/// Identifies one device as one extension reports it.
public struct DeviceKey: Sendable, Hashable, CustomStringConvertible {
    /// The extension's protocol id.
    public let protocolID: String
    /// The device's id within that extension.
    public let deviceID: String

    public init(protocolID: String, deviceID: String) {
        self.protocolID = protocolID
        self.deviceID = deviceID
    }

    public var description: String { "\(protocolID)/\(deviceID)" }
}

/// Where a device (through one protocol) is in its activation.
public enum ActivationState: String, Sendable, Hashable, Codable {
    case idle
    case activating
    case awaitingPairingCode
    case active
    case deactivating
}

/// A device as the picker shows it: one entry per physical device, even when
/// several extensions report it (same display name, different protocols).
public struct SystemDevice: Sendable, Hashable, Identifiable {
    /// One protocol through which the device can be reached.
    public struct Member: Sendable, Hashable {
        public let protocolType: MediaSharingProtocol
        public let device: MediaOutputDevice
        public let state: ActivationState

        public init(protocolType: MediaSharingProtocol, device: MediaOutputDevice, state: ActivationState) {
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
    public var deviceType: MediaOutputDevice.DeviceType {
        members.first { $0.device.deviceType != .unknown }?.device.deviceType ?? .unknown
    }

    /// Everything any member can do.
    public var capabilities: MediaOutputDevice.Capabilities {
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

/// An active route: a device activated through one protocol, in one session.
public struct ActiveRoute: Sendable, Hashable, Identifiable {
    public let session: MediaOutputSession
    public let protocolType: MediaSharingProtocol
    public let device: MediaOutputDevice

    public init(session: MediaOutputSession, protocolType: MediaSharingProtocol, device: MediaOutputDevice) {
        self.session = session
        self.protocolType = protocolType
        self.device = device
    }

    public var id: MediaOutputSession.ID { session.id }
    public var key: DeviceKey { DeviceKey(protocolID: protocolType.identifier, deviceID: device.id) }
}

/// A pairing prompt for the person, surfaced to the app side.
public struct PairingRequest: Sendable, Hashable {
    public let device: MediaOutputDevice
    public let protocolType: MediaSharingProtocol
    public let session: MediaOutputSession
    /// What to tell the person, from the extension ("Enter the code shown on your TV.").
    public let reason: String
    public let authorizationMethod: MediaOutputDevice.AuthorizationMethod

    public init(
        device: MediaOutputDevice, protocolType: MediaSharingProtocol, session: MediaOutputSession, reason: String,
        authorizationMethod: MediaOutputDevice.AuthorizationMethod
    ) {
        self.device = device
        self.protocolType = protocolType
        self.session = session
        self.reason = reason
        self.authorizationMethod = authorizationMethod
    }
}

/// Answers pairing prompts: a UI, a CLI prompt, a D-Bus agent.
public protocol PairingAgent: Sendable {
    /// The person's code, or nil when they cancelled. The system enforces its own timeout.
    func pairingCode(for request: PairingRequest) async -> String?
}

/// What happened in the routing system, in order.
public enum RouteSystemEvent: Sendable {
    case discoveryStarted
    case discoveryStopped
    case deviceFound(SystemDevice)
    case deviceUpdated(SystemDevice)
    case deviceLost(SystemDevice)
    case discoveryFailed(MediaSharingProtocol, MediaDeviceError)
    /// Activation is about to try this member of a merged device, and why (preferred, first
    /// capable, or a fallback after the members before it failed).
    case protocolChosen(DeviceKey, reason: String)
    case activationStateChanged(DeviceKey, session: MediaOutputSession, state: ActivationState)
    case pairingRequested(PairingRequest)
    case activationFailed(DeviceKey, session: MediaOutputSession, error: MediaDeviceError)
    case routeActivated(ActiveRoute)
    /// The route ended; `reason` is nil for a requested deactivation.
    case routeDeactivated(ActiveRoute, reason: MediaDeviceError?)
    case sessionStarted(ActiveRoute, application: String?)
    /// A URL session ended; `reason` is nil for a requested stop.
    case sessionEnded(ActiveRoute, reason: MediaDeviceError?)
    case volumeChanged(ActiveRoute, volume: Float, muted: Bool)
    /// Data from the extension to the app (route data channel).
    case routeData(ActiveRoute, application: String, data: Data)
    /// Data from an application on the device to the app (session data channel).
    case sessionData(ActiveRoute, application: String, data: Data)
}

extension SystemDevice {
    /// A name as the picker compares names: runs of white space are one space, case is ignored.
    public static func comparableName(_ name: String) -> String {
        name.split(whereSeparator: \.isWhitespace).joined(separator: " ").lowercased()
    }
}

/// The one rule matching a person's words to a device, for every list that names devices
/// (the routing system's, the picker's, the D-Bus client's): the item with this id, else the
/// first whose display name matches case and spacing aside. A name two devices share matches
/// only with the distinguishing suffix the list gives each.
public enum DeviceNameMatching {
    public static func first<Items: Sequence>(
        in items: Items, named words: String, id: (Items.Element) -> String, displayName: (Items.Element) -> String
    ) -> Items.Element? {
        if let byID = items.first(where: { id($0) == words }) { return byID }
        let wanted = SystemDevice.comparableName(words)
        return items.first { SystemDevice.comparableName(displayName($0)) == wanted }
    }
}

extension Sequence<SystemDevice> {
    /// The device `nameOrID` names (``DeviceNameMatching``).
    public func named(_ nameOrID: String) -> SystemDevice? {
        DeviceNameMatching.first(in: self, named: nameOrID, id: \.id, displayName: \.displayName)
    }
}
