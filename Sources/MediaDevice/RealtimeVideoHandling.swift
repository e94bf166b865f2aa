public import RoutingModel

/// An extension whose devices show a route's real-time video (`Session1.AcquireVideo`,
/// `mediaroutectl mirror`): the seeds' `realtimeVideoStreaming` while mirroring is active.
///
/// The route system reads the app's pictures and paces them to the declared frame rate; the
/// extension says where they go (``startRealtimeVideo(_:session:)``, which also starts the
/// device) and is told when they stop.
public protocol RealtimeVideoHandling: MediaDeviceExtension {
    /// Pictures of `format` are to come on the session's route: the device is pointed at a
    /// stream of them, and the receiver returned takes each picture on the route's video
    /// thread. Throws when the device shows no video the box can send.
    func startRealtimeVideo(_ format: VideoFrameFormat, session: MediaOutputSession) async throws(MediaDeviceError) -> any RealtimeVideoReceiver
    /// The pictures stopped (the writer closed, the route ended): the stream ends after what
    /// was sent, and the device is stopped.
    func stopRealtimeVideo(session: MediaOutputSession)
    /// From a picture written to it on the screen, as far as the extension knows (default 1.5 s,
    /// what a renderer fetching MPEG-TS over HTTP takes: Docs/video.md).
    func realtimeVideoLatency(session: MediaOutputSession) -> Duration
}

extension RealtimeVideoHandling {
    public func realtimeVideoLatency(session: MediaOutputSession) -> Duration { .milliseconds(1500) }
}
