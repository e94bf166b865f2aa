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

    public init(
        format: SampleBuffer.Format, active: Bool, framesReceived: UInt64 = 0, framesDelivered: UInt64 = 0, underruns: UInt64 = 0,
        silenceFrames: UInt64 = 0, framesDropped: UInt64 = 0, partialFrameBytes: UInt64 = 0, latencyMicroseconds: UInt64 = 0
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
    }
}
