/// A PTP clock's identity and a time read on it: what an AirPlay 2 sync packet names.
public struct AirPlayClockReading: Sendable, Hashable {
    public var clockIdentity: UInt64
    public var time: Duration

    public init(clockIdentity: UInt64, time: Duration) {
        self.clockIdentity = clockIdentity
        self.time = time
    }
}
