

/// A time in NTP's format: seconds since 1900 in the upper 32 bits, the fraction in the lower.
public struct NTPTimestamp: Sendable, Hashable {
    public var seconds: UInt32
    public var fraction: UInt32

    public init(seconds: UInt32, fraction: UInt32) {
        self.seconds = seconds
        self.fraction = fraction
    }

    /// `nanoseconds` since the sender's epoch (any fixed instant: RAOP compares the sender's
    /// times only with each other), as NTP time.
    public init(nanoseconds: UInt64) {
        seconds = UInt32(truncatingIfNeeded: nanoseconds / 1_000_000_000)
        let remainder = nanoseconds % 1_000_000_000
        fraction = UInt32(truncatingIfNeeded: (remainder << 32) / 1_000_000_000)
    }

    var bytes: [UInt8] { bigEndian(seconds) + bigEndian(fraction) }

    init(_ bytes: ArraySlice<UInt8>) {
        let start = bytes.startIndex
        seconds = readBigEndian(bytes, start)
        fraction = readBigEndian(bytes, start + 4)
    }
}
