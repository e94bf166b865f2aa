/// Real-time video opened on a route (`Session1.AcquireVideo`): the descriptor to write
/// pictures into, and what the route made of the request.
///
/// Whoever receives it owns ``descriptor`` and closes it: closing ends the video (the device
/// shows what it was sent, then stops). Pictures are taken at ``VideoFrameFormat/frameRate``:
/// a writer faster than that has the older of two pictures dropped, a slower one has its last
/// picture shown again (both counted in ``RealtimeVideoStatistics``).
public struct VideoAcquisition: Sendable, Hashable {
    /// The write end of a stream socket: whole pictures of ``format``, one after another.
    public var descriptor: Int32
    public var format: VideoFrameFormat
    /// From a write to the picture on the screen, as the route declares it.
    public var latency: Duration

    public init(descriptor: Int32, format: VideoFrameFormat, latency: Duration) {
        self.descriptor = descriptor
        self.format = format
        self.latency = latency
    }
}
