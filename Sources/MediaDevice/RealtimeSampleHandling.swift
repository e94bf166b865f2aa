public import RoutingModel
#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif

/// An extension that takes real-time samples instead of (or as well as) URLs.
public protocol RealtimeSampleHandling: MediaDeviceExtension {
    /// Samples start flowing for the session: set up encoders and the stream to the device.
    func startRealtimeSampleDelivery(session: MediaOutputSession)
    /// Samples stop: tear down encoders and stop sending.
    func stopRealtimeSampleDelivery(session: MediaOutputSession)
    /// One buffer of samples for the session, in presentation order.
    func receiveSamples(_ buffer: SampleBuffer, session: MediaOutputSession)
    /// The PCM the session's device takes and the latency it adds (default: ``RealtimeAudioSupport/standard``).
    func realtimeAudioSupport(session: MediaOutputSession) -> RealtimeAudioSupport
    /// The samples already handed over are not to be played: the app paused or jumped in its
    /// source. A device that buffers (AirPlay's two seconds) drops what it holds, so the pause
    /// is heard now; samples that come after play as soon as they can. Default: nothing (a
    /// device that plays what it gets at once has nothing to drop).
    func flushRealtimeSamples(session: MediaOutputSession)
    /// What the samples are, for a device that shows it (AirPlay's title, artwork and progress).
    /// Called when the app sets it and again for each new stream on the route. Default: ignored.
    func updateRealtimeNowPlaying(_ nowPlaying: RealtimeNowPlaying, session: MediaOutputSession)
    /// Where the session's samples go on the thread that delivers them, instead of one hop to
    /// this extension's actor per buffer (``receiveSamples(_:session:)``); nil (the default)
    /// for the hop. Asked once samples start (after ``startRealtimeSampleDelivery(session:)``),
    /// for each delivery opened on the route.
    func realtimeSampleReceiver(session: MediaOutputSession) -> (any RealtimeSampleReceiver)?
    /// Samples of `format` are about to come: the app acquired the route's audio and has not
    /// written yet. A device that takes long to start (a renderer told to fetch a URL, a Cast
    /// receiver told to load one) is started now, so the first samples play as they come
    /// rather than after the device's start. Default: nothing.
    func prepareRealtimeSamples(_ format: SampleBuffer.Format, session: MediaOutputSession)
}

extension RealtimeSampleHandling {
    public func realtimeAudioSupport(session: MediaOutputSession) -> RealtimeAudioSupport { .standard }
    public func flushRealtimeSamples(session: MediaOutputSession) {}
    public func updateRealtimeNowPlaying(_ nowPlaying: RealtimeNowPlaying, session: MediaOutputSession) {}
    public func realtimeSampleReceiver(session: MediaOutputSession) -> (any RealtimeSampleReceiver)? { nil }
    public func prepareRealtimeSamples(_ format: SampleBuffer.Format, session: MediaOutputSession) {}
}
