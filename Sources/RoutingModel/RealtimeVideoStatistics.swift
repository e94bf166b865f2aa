/// How a route's real-time video is going.
public struct RealtimeVideoStatistics: Sendable, Hashable, Codable {
    /// What the app writes.
    public var format: VideoFrameFormat
    /// Whether pictures still flow (false once the writer closed).
    public var active: Bool
    /// Whole pictures read from the writer.
    public var framesReceived: UInt64
    /// Pictures sent to the device at the declared rate, repeats included.
    public var framesSent: UInt64
    /// Pictures the writer sent faster than the declared rate, left out.
    public var framesDropped: UInt64
    /// Pictures shown again because the writer was slower than the declared rate.
    public var framesRepeated: UInt64
    /// Pictures the encoder refused or could not keep up with.
    public var framesNotEncoded: UInt64
    /// The video codec and container sent ("H.264 in MPEG-TS").
    public var codec: String?
    /// Bit rate the encoder aims at (for H.264 the app encoded: what it wrote so far), bit/s.
    public var bitrate: Int?
    /// Why the video ended when the writer's bytes were refused (H.264 that is not an Annex B
    /// stream of the declared size, B-frames, an access unit over its budget); nil otherwise.
    public var failure: String?

    public init(
        format: VideoFrameFormat, active: Bool, framesReceived: UInt64 = 0, framesSent: UInt64 = 0, framesDropped: UInt64 = 0,
        framesRepeated: UInt64 = 0, framesNotEncoded: UInt64 = 0, codec: String? = nil, bitrate: Int? = nil, failure: String? = nil
    ) {
        self.failure = failure
        self.format = format
        self.active = active
        self.framesReceived = framesReceived
        self.framesSent = framesSent
        self.framesDropped = framesDropped
        self.framesRepeated = framesRepeated
        self.framesNotEncoded = framesNotEncoded
        self.codec = codec
        self.bitrate = bitrate
    }
}
