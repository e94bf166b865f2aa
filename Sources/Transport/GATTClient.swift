

/// Reading, writing and following the characteristics of a connected Bluetooth LE device.
public protocol GATTClient: Sendable {
    /// The characteristic with this UUID, waiting up to `timeout` for the device's
    /// services to be resolved; nil when the device does not have it.
    func characteristic(_ uuid: String, timeout: Duration) async -> GATTCharacteristic?

    /// Reads the characteristic's value.
    func read(_ characteristic: GATTCharacteristic) async throws(GATTError) -> [UInt8]

    /// Writes a value, with a response (a write request) or without (a write command).
    func write(_ value: [UInt8], to characteristic: GATTCharacteristic, withResponse: Bool) async throws(GATTError)

    /// Turns notifications on and gives every notified value; the stream finishes
    /// when the characteristic or the device goes away.
    func notifications(of characteristic: GATTCharacteristic) async throws(GATTError) -> AsyncStream<[UInt8]>
}
