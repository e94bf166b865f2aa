/// A device as apps see it: who it is, what it can do and whether it can be used now,
/// without how to reach it (the extension's `MediaOutputDevice` keeps the transports'
/// endpoints; the routing system maps one to this at its edge). The same value in the
/// daemon, over the bus and in an app.
public struct OutputDeviceDescription: Sendable, Hashable, Identifiable {
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
    /// Why the device is listed but cannot be activated now; nil when it can be.
    public var unavailableReason: String?

    /// Whether the device can be activated now.
    public var isAvailable: Bool { unavailableReason == nil }

    /// A description; nil when `id` or `displayName` is empty.
    public init?(
        id: String, displayName: String, capabilities: Capabilities, deviceType: DeviceType = .unknown,
        volumeControl: VolumeControl = .none, canMute: Bool = false, unavailableReason: String? = nil
    ) {
        guard !id.isEmpty, !displayName.trimmingSpaces.isEmpty else { return nil }
        self.init(
            validatedID: id, displayName: displayName, capabilities: capabilities, deviceType: deviceType,
            volumeControl: volumeControl, canMute: canMute, unavailableReason: unavailableReason)
    }

    /// A description of a device whose id and name were checked where it was made.
    package init(
        validatedID id: String, displayName: String, capabilities: Capabilities, deviceType: DeviceType,
        volumeControl: VolumeControl, canMute: Bool, unavailableReason: String?
    ) {
        self.id = id
        self.displayName = displayName
        self.capabilities = capabilities
        self.deviceType = deviceType
        self.volumeControl = volumeControl
        self.canMute = canMute
        self.unavailableReason = unavailableReason
    }
}

extension String {
    /// The string without white space at either end.
    package var trimmingSpaces: Substring {
        let start = firstIndex { !$0.isWhitespace } ?? endIndex
        let end = lastIndex { !$0.isWhitespace }.map(index(after:)) ?? start
        return self[start..<max(start, end)]
    }
}
