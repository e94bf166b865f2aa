

/// A characteristic of a device's GATT database, as one connection knows it.
public struct GATTCharacteristic: Sendable, Hashable {
    /// The characteristic's UUID, 128-bit and lower case.
    public var uuid: String
    /// The transport's own handle for it (BlueZ: the characteristic's object path).
    public var handle: String

    public init(uuid: String, handle: String) {
        self.uuid = uuid
        self.handle = handle
    }
}
