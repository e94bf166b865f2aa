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
