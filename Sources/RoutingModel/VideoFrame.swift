/// One picture of a route's real-time video, on the box's clock.
public struct VideoFrame: Sendable {
    /// The picture's layout and size.
    public var format: VideoFrameFormat
    /// When it is due to show (the clock of the delivery that made it).
    public var presentationTime: Duration
    /// ``VideoFrameFormat/frameBytes`` bytes; for H.264, one access unit (Annex B).
    public var data: [UInt8]
    /// The same picture as the frame before, sent again because the app wrote none in time
    /// (a screen that did not change): an encoder may spend almost nothing on it.
    public var isRepeat: Bool

    public init(format: VideoFrameFormat, presentationTime: Duration, data: [UInt8], isRepeat: Bool = false) {
        self.format = format
        self.presentationTime = presentationTime
        self.data = data
        self.isRepeat = isRepeat
    }
}
