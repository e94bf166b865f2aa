#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif

/// A simulated device of the loopback transport, with its behaviour and injected faults.
///
/// Times are seconds of host time since the transport started.
public struct LoopbackDeviceSpec: Sendable, Hashable, Codable {
    /// What the simulated device is.
    public enum Kind: String, Sendable, Hashable, Codable {
        /// Plays URLs, shows a PIN, absolute volume and mute.
        case tv
        /// Takes real-time audio, relative volume only.
        case speaker
    }

    /// A volume change made on the device itself (its buttons), after a connection opened.
    public struct DeviceVolumeChange: Sendable, Hashable, Codable {
        public var after: Double
        public var volume: Float
        public init(after: Double, volume: Float) {
            self.after = after
            self.volume = volume
        }
    }

    /// Unique name; also the endpoint id.
    public var name: String
    public var displayName: String
    public var kind: Kind
    /// A PIN the device demands before anything else (nil: no pairing).
    public var pin: String?
    public var signalStrength: Int?
    public var attributes: [String: String]
    public var services: [String]
    /// When the device appears (nil: present from the start).
    public var appearAfter: Double?
    /// When the device disappears (nil: never).
    public var disappearAfter: Double?
    /// Refuse every connection.
    public var refusesConnections: Bool
    /// Delay before each reply or device event reaches the sender.
    public var replyDelay: Double
    /// Drop every connection this long after it opened (nil: never).
    public var dropConnectionAfter: Double?
    /// Initial volume, 0...1.
    public var volume: Float
    /// Number of volume steps of a relative-volume device.
    public var volumeSteps: Int
    /// Volume changes the device makes by itself after a connection opened.
    public var deviceVolumeChanges: [DeviceVolumeChange]
    /// Length of any media the device plays, in seconds.
    public var mediaDuration: Double
    /// The network interface or Bluetooth controller the device is reached
    /// through (nil: always reachable). When the daemon's adapter inventory
    /// reports it removed or disabled, the device disappears until it is back.
    public var adapter: String?
    /// Seconds a speaker buffers before it plays real-time audio (what it declares as its latency).
    public var audioLatency: Double

    public init(
        name: String,
        displayName: String? = nil,
        kind: Kind,
        pin: String? = nil,
        signalStrength: Int? = nil,
        attributes: [String: String] = [:],
        services: [String] = [],
        appearAfter: Double? = nil,
        disappearAfter: Double? = nil,
        refusesConnections: Bool = false,
        replyDelay: Double = 0,
        dropConnectionAfter: Double? = nil,
        volume: Float = 0.5,
        volumeSteps: Int = 16,
        deviceVolumeChanges: [DeviceVolumeChange] = [],
        mediaDuration: Double = 600,
        adapter: String? = nil,
        audioLatency: Double = 0
    ) {
        self.name = name
        self.displayName = displayName ?? name
        self.kind = kind
        self.pin = pin
        self.signalStrength = signalStrength
        self.attributes = attributes
        self.services = services
        self.appearAfter = appearAfter
        self.disappearAfter = disappearAfter
        self.refusesConnections = refusesConnections
        self.replyDelay = replyDelay
        self.dropConnectionAfter = dropConnectionAfter
        self.volume = volume
        self.volumeSteps = volumeSteps
        self.deviceVolumeChanges = deviceVolumeChanges
        self.mediaDuration = mediaDuration
        self.adapter = adapter
        self.audioLatency = audioLatency
    }

    private enum CodingKeys: String, CodingKey {
        case name, displayName, kind, pin, signalStrength, attributes, services, appearAfter, disappearAfter
        case refusesConnections, replyDelay, dropConnectionAfter, volume, volumeSteps, deviceVolumeChanges
        case mediaDuration, adapter, audioLatency
    }

    /// Decodes a device; every key but `name` and `kind` is optional in scenario files.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            name: try c.decode(String.self, forKey: .name),
            displayName: try c.decodeIfPresent(String.self, forKey: .displayName),
            kind: try c.decode(Kind.self, forKey: .kind),
            pin: try c.decodeIfPresent(String.self, forKey: .pin),
            signalStrength: try c.decodeIfPresent(Int.self, forKey: .signalStrength),
            attributes: try c.decodeIfPresent([String: String].self, forKey: .attributes) ?? [:],
            services: try c.decodeIfPresent([String].self, forKey: .services) ?? [],
            appearAfter: try c.decodeIfPresent(Double.self, forKey: .appearAfter),
            disappearAfter: try c.decodeIfPresent(Double.self, forKey: .disappearAfter),
            refusesConnections: try c.decodeIfPresent(Bool.self, forKey: .refusesConnections) ?? false,
            replyDelay: try c.decodeIfPresent(Double.self, forKey: .replyDelay) ?? 0,
            dropConnectionAfter: try c.decodeIfPresent(Double.self, forKey: .dropConnectionAfter),
            volume: try c.decodeIfPresent(Float.self, forKey: .volume) ?? 0.5,
            volumeSteps: try c.decodeIfPresent(Int.self, forKey: .volumeSteps) ?? 16,
            deviceVolumeChanges: try c.decodeIfPresent([DeviceVolumeChange].self, forKey: .deviceVolumeChanges) ?? [],
            mediaDuration: try c.decodeIfPresent(Double.self, forKey: .mediaDuration) ?? 600,
            adapter: try c.decodeIfPresent(String.self, forKey: .adapter),
            audioLatency: try c.decodeIfPresent(Double.self, forKey: .audioLatency) ?? 0
        )
    }
}
