

/// A device playing as part of a remote session, and how its volume is controlled.
///
/// The seeds call this `MediaDevice`; MediaRoute already has a module of that
/// name (the extension API), so the Now Playing side spells it `RemoteMediaDevice`.
public struct RemoteMediaDevice: Sendable, Identifiable {
    public enum DeviceType: String, Sendable, Hashable, Codable {
        case speaker, tv, headphones, computer, setTopBox, unknown
    }

    /// An operation the system can perform on the device.
    public enum Capability: Sendable {
        /// Volume as a level 0.0–1.0; the closure gets the requested level.
        case absoluteVolume(Float, onChange: @Sendable (Float) async throws -> Void)
        /// Volume in steps only.
        case relativeVolume(onIncrement: @Sendable () async throws -> Void, onDecrement: @Sendable () async throws -> Void)
    }

    public var id: String
    public var name: String
    public var type: DeviceType
    public var capabilities: [Capability]

    public init(id: String, name: String, type: DeviceType, capabilities: [Capability] = []) {
        self.id = id
        self.name = name
        self.type = type
        self.capabilities = capabilities
    }

    /// Its description without the handlers.
    public var descriptor: RemoteMediaDeviceDescriptor {
        var volume: Float?
        var relative = false
        for capability in capabilities {
            switch capability {
            case .absoluteVolume(let level, _): volume = min(max(level, 0), 1)
            case .relativeVolume: relative = true
            }
        }
        return RemoteMediaDeviceDescriptor(id: id, name: name, type: type, volume: volume, supportsRelativeVolume: relative)
    }
}
