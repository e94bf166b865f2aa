/// How a route's real-time video is encoded and kept for its readers.
public struct LiveVideoSettings: Sendable, Hashable {
    /// Bits per second the encoder aims at; nil: 0.08 bit per pixel per frame (2.2 Mbit/s at
    /// 720p30, 5 Mbit/s at 1080p30), what screen and camera streams look clean at in H.264.
    public var bitRate: Int?
    /// Time from one IDR to the next. A renderer that (re)connects is started at an IDR made for
    /// it at once, so this bounds only how long a lost picture's damage shows.
    public var intraPeriod: Duration
    /// Stream kept for a reader that falls behind before it skips ahead.
    public var kept: Duration
    /// Tune the encoder for a desktop (text, flat areas, scene cuts) rather than a camera.
    public var screenContent: Bool
    /// How far the transport stream's clock runs ahead of presentation (``MPEGTSMuxer/pcrLead``).
    public var pcrLead: Duration
    /// From a picture written to it shown, as declared to the app (measured per renderer: Docs/video.md).
    public var latency: Duration
    /// libavcodec's H.264 encoders tried, in order, before OpenH264: a box's hardware encoder
    /// (`h264_v4l2m2m`: the V4L2 memory-to-memory encoder of SoCs; FFmpeg finds its device). One
    /// that does not open (no such device, no libavcodec) is passed over.
    public var hardwareEncoders: [String]

    public init(
        bitRate: Int? = nil, intraPeriod: Duration = .seconds(2), kept: Duration = .seconds(4), screenContent: Bool = false,
        pcrLead: Duration = .milliseconds(100), latency: Duration = .milliseconds(1500), hardwareEncoders: [String] = ["h264_v4l2m2m"]
    ) {
        self.hardwareEncoders = hardwareEncoders
        self.latency = latency
        self.bitRate = bitRate
        self.intraPeriod = intraPeriod
        self.kept = kept
        self.screenContent = screenContent
        self.pcrLead = pcrLead
    }
}
