

/// A failed GATT operation, with the ATT error code when the device gave one.
public struct GATTError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The ATT error code (Core spec Vol 3 Part F 3.4.1.1); 0x80–0x9F are the
    /// profile's own errors, e.g. the Volume Control Service's stale change counter.
    public var attErrorCode: UInt8?
    public var message: String

    public init(attErrorCode: UInt8? = nil, _ message: String) {
        self.attErrorCode = attErrorCode
        self.message = message
    }

    public var description: String {
        attErrorCode.map { "ATT error 0x\(String($0, radix: 16)): \(message)" } ?? message
    }
}
