/// How one route plays, in one schema: the protocol and its version, how it keeps time, the
/// codec and bit rate, the format, the latency it declares and the one measured, and how
/// real-time delivery goes. `mediaroutectl status --json`, the daemon's `Session1`
/// properties and `SystemRoute.status()` all give this value, so a protocol that learns
/// something new about its routes extends this type rather than each surface on its own.
public struct RouteStatus: Sendable, Hashable, Codable {
    /// How a protocol keeps a device's playback in time.
    public enum Timing: String, Sendable, Hashable, Codable, CaseIterable {
        /// The device plays what it receives as it arrives (A2DP, a URL it fetches).
        case asReceived = "as-received"
        /// Timestamps against the sender's clock, synchronised over NTP-style exchanges (AirPlay 1).
        case ntp
        /// IEEE 1588 PTP (AirPlay 2).
        case ptp
        /// The device schedules playback on its own clock, corrected by the sender (Cast, UPnP groups).
        case deviceClock = "device-clock"
    }

    /// What the route's extension says about how it plays; empty where it says nothing.
    public struct Details: Sendable, Hashable, Codable {
        /// The protocol's version or flavour, as people name it (`AirPlay 1 (RAOP)`, `A2DP 1.3`).
        public var protocolVersion: String?
        public var timing: Timing?
        /// The codec on the link (`SBC`, `ALAC`, `L16`); nil when the device fetches a URL.
        public var codec: String?
        /// Bits per second on the link, when the codec has a rate.
        public var bitrate: Int?
        /// The buffering the device and its link add, in microseconds.
        public var declaredLatencyMicroseconds: UInt64?
        /// The device's playback clock beside the box's, in parts per million (+: faster), as
        /// its position reports measure it; nil where nothing measures it (yet).
        public var deviceClockPPM: Double?
        /// How much later than when it started the device plays now, in microseconds (+: later):
        /// its drift from the route's (and group's) timeline not yet corrected; nil with the rate.
        public var timelineOffsetMicroseconds: Int64?
        /// The rate correction applied to what the device is sent, in parts per million; nil
        /// while samples go unchanged.
        public var driftCorrectionPPM: Double?

        public init(
            protocolVersion: String? = nil, timing: Timing? = nil, codec: String? = nil, bitrate: Int? = nil,
            declaredLatencyMicroseconds: UInt64? = nil
        ) {
            self.protocolVersion = protocolVersion
            self.timing = timing
            self.codec = codec
            self.bitrate = bitrate
            self.declaredLatencyMicroseconds = declaredLatencyMicroseconds
        }
    }

    /// The device's name.
    public var device: String
    /// The protocol's id (`org.mediaroute.raop`).
    public var protocolID: String
    /// The protocol's display name (`AirPlay`).
    public var protocolName: String
    /// Why activation chose this protocol.
    public var protocolReason: String?
    public var details: Details
    /// The real-time audio format acquired on the route (`s16le/44100/2`); nil when none.
    public var format: String?
    /// The latency now, measured on the delivery: the route's own plus what is buffered, in
    /// microseconds; nil without real-time delivery.
    public var measuredLatencyMicroseconds: UInt64?
    /// How real-time delivery goes; nil when none was acquired.
    public var audio: RealtimeAudioStatistics?
    /// How real-time video goes (`Session1.AcquireVideo`); nil when none was acquired.
    public var video: RealtimeVideoStatistics?

    public init(
        device: String, protocolID: String, protocolName: String, protocolReason: String? = nil, details: Details = Details(),
        audio: RealtimeAudioStatistics? = nil, video: RealtimeVideoStatistics? = nil
    ) {
        self.device = device
        self.protocolID = protocolID
        self.protocolName = protocolName
        self.protocolReason = protocolReason
        self.details = details
        self.audio = audio
        self.video = video
        self.format = audio?.format.name
        self.measuredLatencyMicroseconds = audio?.latencyMicroseconds
    }
}
