

/// A receiver's request to send packets again (to our control port).
public struct ResendRequest: Sendable, Hashable {
    public var first: UInt16
    public var count: UInt16

    /// Nil for anything that is not a resend request.
    public init?(_ bytes: [UInt8]) {
        guard bytes.count >= 8, bytes[1] & 0x7F == 0x55 else { return nil }
        first = UInt16(bytes[4]) << 8 | UInt16(bytes[5])
        count = UInt16(bytes[6]) << 8 | UInt16(bytes[7])
    }
}
