/// An Announce message's body: who the grandmaster is and how good its clock says it is
/// (what the best-master algorithm compares).
public struct PTPAnnounce: Sendable, Hashable {
    public static let length = 30

    public var origin: PTPTimestamp
    public var utcOffset: Int16
    public var priority1: UInt8
    /// Clock class (248: default, 6: locked to a primary reference), accuracy, log variance.
    public var clockClass: UInt8
    public var clockAccuracy: UInt8
    public var variance: UInt16
    public var priority2: UInt8
    public var grandmaster: UInt64
    public var stepsRemoved: UInt16
    /// 0xA0: an internal oscillator.
    public var timeSource: UInt8

    public init(
        origin: PTPTimestamp = PTPTimestamp(seconds: 0, nanoseconds: 0), utcOffset: Int16 = 37, priority1: UInt8 = 248, clockClass: UInt8 = 248,
        clockAccuracy: UInt8 = 0xFE, variance: UInt16 = 0xFFFF, priority2: UInt8 = 248, grandmaster: UInt64, stepsRemoved: UInt16 = 0, timeSource: UInt8 = 0xA0
    ) {
        self.origin = origin
        self.utcOffset = utcOffset
        self.priority1 = priority1
        self.clockClass = clockClass
        self.clockAccuracy = clockAccuracy
        self.variance = variance
        self.priority2 = priority2
        self.grandmaster = grandmaster
        self.stepsRemoved = stepsRemoved
        self.timeSource = timeSource
    }

    init(bytes: [UInt8]) throws(PTPError) {
        guard bytes.count >= Self.length else { throw PTPError("a PTP Announce of \(bytes.count) bytes") }
        origin = PTPTimestamp(bytes: Array(bytes[0..<10]))
        utcOffset = Int16(bitPattern: UInt16(bytes[10]) << 8 | UInt16(bytes[11]))
        priority1 = bytes[13]
        clockClass = bytes[14]
        clockAccuracy = bytes[15]
        variance = UInt16(bytes[16]) << 8 | UInt16(bytes[17])
        priority2 = bytes[18]
        grandmaster = bytes[19..<27].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        stepsRemoved = UInt16(bytes[27]) << 8 | UInt16(bytes[28])
        timeSource = bytes[29]
    }

    var bytes: [UInt8] {
        let offset = UInt16(bitPattern: utcOffset)
        var out = origin.bytes
        out += [UInt8(offset >> 8), UInt8(truncatingIfNeeded: offset), 0, priority1, clockClass, clockAccuracy, UInt8(variance >> 8), UInt8(truncatingIfNeeded: variance), priority2]
        out += (0..<8).map { UInt8(truncatingIfNeeded: grandmaster >> (56 - 8 * UInt64($0))) }
        out += [UInt8(stepsRemoved >> 8), UInt8(truncatingIfNeeded: stepsRemoved), timeSource]
        return out
    }
}
