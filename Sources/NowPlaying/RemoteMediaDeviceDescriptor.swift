

/// A device in a session as remote UIs see it.
public struct RemoteMediaDeviceDescriptor: Sendable, Hashable, Codable {
    public var id: String
    public var name: String
    public var type: RemoteMediaDevice.DeviceType
    /// The absolute volume, when the device has one.
    public var volume: Float?
    public var supportsRelativeVolume: Bool
}
