

/// A receiver's timing request (to our timing port): its transmit time, which the reply echoes.
public struct TimingRequest: Sendable, Hashable {
    public var transmitted: NTPTimestamp

    /// Nil for anything that is not a 32-byte timing request.
    public init?(_ bytes: [UInt8]) {
        guard bytes.count >= 32, bytes[1] & 0x7F == 0x52 else { return nil }
        transmitted = NTPTimestamp(bytes[24..<32])
    }
}
