public import RoutingModel

/// Takes a route's real-time pictures on the route's own video thread, in presentation order,
/// one per frame period; encoding happens here, so the thread's pace is the encoder's.
public protocol RealtimeVideoReceiver: Sendable {
    /// One picture; false when it could not be encoded or sent (counted, never retried).
    func receive(_ frame: VideoFrame) -> Bool
    /// No more pictures: the stream ends after what was sent.
    func finish()
    /// The codec and container the device is sent ("H.264 in MPEG-TS"), and its bit rate.
    var codec: String { get }
    var bitrate: Int { get }
}
