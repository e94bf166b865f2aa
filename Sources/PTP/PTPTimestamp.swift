/// A PTP timestamp: 48 bits of seconds and 32 of nanoseconds (below 10⁹), big-endian.
public struct PTPTimestamp: Sendable, Hashable, Comparable {
    public static let length = 10

    public var seconds: UInt64
    public var nanoseconds: UInt32

    public init(seconds: UInt64, nanoseconds: UInt32) {
        self.seconds = seconds & 0xFFFF_FFFF_FFFF
        self.nanoseconds = nanoseconds
    }

    /// A non-negative duration since the clock's epoch.
    public init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self.init(seconds: UInt64(clamping: max(0, seconds)), nanoseconds: UInt32(clamping: max(0, attoseconds / 1_000_000_000)))
    }

    /// Reads 10 bytes; nanoseconds at or over 10⁹ (not a valid time) are kept as sent, for the
    /// caller to refuse (``isValid``).
    init(bytes: [UInt8]) {
        seconds = bytes[0..<6].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        nanoseconds = bytes[6..<10].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    public var isValid: Bool { nanoseconds < 1_000_000_000 }

    public var bytes: [UInt8] {
        (0..<6).map { UInt8(truncatingIfNeeded: seconds >> (40 - 8 * UInt64($0))) } + (0..<4).map { UInt8(truncatingIfNeeded: nanoseconds >> (24 - 8 * UInt32($0))) }
    }

    /// As a duration since the epoch.
    public var duration: Duration { .seconds(Int64(seconds)) + .nanoseconds(Int64(nanoseconds)) }

    /// Nanoseconds since the epoch (48-bit seconds fit an Int64 of nanoseconds up to 2²⁶³/10⁹ s).
    public var totalNanoseconds: Int64 {
        Int64(clamping: seconds).multipliedReportingOverflow(by: 1_000_000_000).partialValue &+ Int64(nanoseconds)
    }

    public static func < (lhs: PTPTimestamp, rhs: PTPTimestamp) -> Bool {
        (lhs.seconds, lhs.nanoseconds) < (rhs.seconds, rhs.nanoseconds)
    }
}
