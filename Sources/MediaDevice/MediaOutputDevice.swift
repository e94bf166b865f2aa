public import Transport

/// A TV, speaker or other device that an extension found and can route media to.
///
/// Use a stable ``id`` derived from the protocol's own device identity (a UDN,
/// a Bluetooth address) so that the same physical device keeps its id across
/// discoveries. Devices reported by different extensions are shown once by the
/// system, with both protocols, when their ``identifiers`` meet (or, as a last
/// resort, when they share a display name and type and no identifier differs).
public struct MediaOutputDevice: Sendable, Hashable, Identifiable {
    /// What the device can do.
    public struct Capabilities: OptionSet, Sendable, Hashable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// The device fetches and plays a URL itself.
        public static let urlPlayback = Capabilities(rawValue: 1 << 0)
        /// The device plays audio samples streamed to it.
        public static let realtimeAudioStreaming = Capabilities(rawValue: 1 << 1)
        /// The device shows video frames streamed to it (screen mirroring).
        public static let realtimeVideoStreaming = Capabilities(rawValue: 1 << 2)
    }

    /// What kind of device this is; the picker may list video devices first.
    public enum DeviceType: String, Sendable, Hashable, Codable, CaseIterable {
        case tv
        case speaker
        case headphones
        case setTopBox
        case computer
        /// Speakers that play as one, announced as a device of their own (a Cast group).
        case speakerGroup
        case unknown

        /// Whether the device shows video.
        public var isVideo: Bool { self == .tv || self == .setTopBox || self == .computer }

        /// A symbol name for the device type, as pickers show it.
        public var symbolName: String {
            switch self {
            case .tv: "tv"
            case .speaker: "hifispeaker"
            case .headphones: "headphones"
            case .setTopBox: "appletv"
            case .computer: "desktopcomputer"
            case .speakerGroup: "hifispeaker.2"
            case .unknown: "airplayaudio"
            }
        }
    }

    /// How the device's volume can be controlled.
    public enum VolumeControl: String, Sendable, Hashable, Codable {
        /// Direct levels 0.0–1.0: the system calls `setVolume` and `volume(for:)`.
        case absolute
        /// Only steps up or down: the system calls `changeVolume(by:for:)`.
        case relative
        /// No volume control.
        case none
    }

    /// How a person proves they may use the device.
    public enum AuthorizationMethod: Sendable, Hashable {
        /// Number of digits of a numeric code.
        public enum CodeLength: Int, Sendable, Hashable {
            case fourCharacter = 4
            case sixCharacter = 6
        }

        /// A numeric PIN with a fixed number of digits.
        case numericCode(length: CodeLength)
        /// A free-form password.
        case password
        /// A yes/no confirmation that a shown code matches (BlueZ `RequestConfirmation`).
        case confirmation(code: String)
        /// No authorization.
        case none
    }

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

extension String {
    var trimmingSpaces: Substring {
        let start = firstIndex { !$0.isWhitespace } ?? endIndex
        let end = lastIndex { !$0.isWhitespace }.map(index(after:)) ?? start
        return self[start..<max(start, end)]
    }
}
