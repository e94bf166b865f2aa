

/// One datagram from the device.
public struct DeviceDatagram: Sendable, Hashable {
    /// The device's port it came from.
    public var sourcePort: Int
    public var bytes: [UInt8]

    public init(sourcePort: Int, bytes: [UInt8]) {
        self.sourcePort = sourcePort
        self.bytes = bytes
    }
}
