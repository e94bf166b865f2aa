/// How real-time delivery on a route is going.
public struct RealtimeAudioStatistics: Sendable, Hashable, Codable {
    /// The format being delivered.
    public var format: SampleBuffer.Format
    /// Whether samples still flow (false once the writer closed and the rest played out).
    public var active: Bool
    /// Whole frames read from the writer.
    public var framesReceived: UInt64
    /// Frames handed to the device, silence included.
    public var framesDelivered: UInt64
    /// Device clock ticks that found too few frames from the writer.
    public var underruns: UInt64
    /// Frames of silence put in for a writer that was late.
    public var silenceFrames: UInt64
    /// Frames the device could not take in time (dropped so the daemon never waits on it).
    public var framesDropped: UInt64
    /// Bytes of a last, incomplete frame thrown away at the end of the stream.
    public var partialFrameBytes: UInt64
    /// The latency now: the route's own plus what is buffered, in microseconds.
    public var latencyMicroseconds: UInt64
    /// In a real-time group: how much later than the group's slowest member the route's
    /// samples start (its device buffers less), in microseconds; it follows the device's
    /// reported latency. 0 alone, or for the slowest.
    public var groupLeadMicroseconds: UInt64

    public init(
        format: SampleBuffer.Format, active: Bool, framesReceived: UInt64 = 0, framesDelivered: UInt64 = 0, underruns: UInt64 = 0,
        silenceFrames: UInt64 = 0, framesDropped: UInt64 = 0, partialFrameBytes: UInt64 = 0, latencyMicroseconds: UInt64 = 0,
        groupLeadMicroseconds: UInt64 = 0
    ) {
        self.format = format
        self.active = active
        self.framesReceived = framesReceived
        self.framesDelivered = framesDelivered
        self.underruns = underruns
        self.silenceFrames = silenceFrames
        self.framesDropped = framesDropped
        self.partialFrameBytes = partialFrameBytes
        self.latencyMicroseconds = latencyMicroseconds
        self.groupLeadMicroseconds = groupLeadMicroseconds
    }
}

extension RealtimeAudioStatistics {
    private enum CodingKeys: String, CodingKey {
        case format, active, framesReceived, framesDelivered, underruns, silenceFrames, framesDropped, partialFrameBytes, latencyMicroseconds
        case groupLeadMicroseconds
    }

    /// The format as its name (`s16le/44100/2`), as the bus and the CLI write it.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(format.name, forKey: .format)
        try container.encode(active, forKey: .active)
        try container.encode(framesReceived, forKey: .framesReceived)
        try container.encode(framesDelivered, forKey: .framesDelivered)
        try container.encode(underruns, forKey: .underruns)
        try container.encode(silenceFrames, forKey: .silenceFrames)
        try container.encode(framesDropped, forKey: .framesDropped)
        try container.encode(partialFrameBytes, forKey: .partialFrameBytes)
        try container.encode(latencyMicroseconds, forKey: .latencyMicroseconds)
        try container.encode(groupLeadMicroseconds, forKey: .groupLeadMicroseconds)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let name = try container.decode(String.self, forKey: .format)
        guard let format = SampleBuffer.Format(name: name) else {
            throw DecodingError.dataCorruptedError(forKey: .format, in: container, debugDescription: "not a PCM format name: \(name)")
        }
        self.init(
            format: format, active: try container.decode(Bool.self, forKey: .active),
            framesReceived: try container.decode(UInt64.self, forKey: .framesReceived),
            framesDelivered: try container.decode(UInt64.self, forKey: .framesDelivered),
            underruns: try container.decode(UInt64.self, forKey: .underruns),
            silenceFrames: try container.decode(UInt64.self, forKey: .silenceFrames),
            framesDropped: try container.decode(UInt64.self, forKey: .framesDropped),
            partialFrameBytes: try container.decode(UInt64.self, forKey: .partialFrameBytes),
            latencyMicroseconds: try container.decode(UInt64.self, forKey: .latencyMicroseconds),
            // Absent from what daemons before 0.5.0 wrote.
            groupLeadMicroseconds: try container.decodeIfPresent(UInt64.self, forKey: .groupLeadMicroseconds) ?? 0)
    }
}
