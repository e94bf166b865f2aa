#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// What the app-facing API needs from a routing system: the in-process
/// `RouteSystem` itself, or a client of `mediarouted` over D-Bus.
public protocol SystemRoutingBackend: Sendable {
    func events() async -> AsyncStream<RouteSystemEvent>
    var activeRoutes: [ActiveRoute] { get async }
    var devicesList: [SystemDevice] { get async }
    func setPairingAgent(_ agent: (any PairingAgent)?) async
    /// Activates the merged device that has the member `device` (any of its members' keys
    /// names it). Names are resolved at the edges (CLI, D-Bus, ``devicesList``'s `named(_:)`),
    /// not here.
    func activate(_ device: DeviceKey, protocolID: String?, features: OutputDeviceDescription.Capabilities) async throws -> ActiveRoute
    func deactivate(_ session: MediaOutputSession) async
    func beginDiscovery(client: String) async
    func endDiscovery(client: String) async
    func setVolume(_ level: Float, on session: MediaOutputSession) async throws
    func changeVolume(by increments: Int, on session: MediaOutputSession) async throws
    func setMuted(_ muted: Bool, on session: MediaOutputSession) async throws
    func volume(on session: MediaOutputSession) async throws -> (volume: Float, muted: Bool)
    func startSession(on session: MediaOutputSession, identifier: String?, url: URL, metadata: PlaybackMetadata) async throws -> any InterfaceControllable
    func stopSession(on session: MediaOutputSession) async
    /// The application the device runs for the session (nil: no session data channel).
    func sessionApplication(on session: MediaOutputSession) async -> String?
    func sendRouteData(_ data: Data, fromApplication application: String, on session: MediaOutputSession) async throws
    func sendSessionData(_ data: Data, on session: MediaOutputSession) async throws
    /// Tells the route real-time samples are coming (`startRealtimeSampleDelivery(on:)` in
    /// SampleSink gives the sink to send them through).
    /// - Throws: ``MediaDeviceError`` `deviceNotActive`, or `unsupported` for a route that
    ///   takes no real-time samples.
    func beginRealtimeSampleDelivery(on session: MediaOutputSession) async throws
    func stopRealtimeSampleDelivery(on session: MediaOutputSession) async
    /// Opens paced real-time delivery of `format` on a route: the caller writes PCM into
    /// the returned descriptor and closes it to end the stream. A new acquisition on the
    /// same route ends the one before.
    /// - Throws: ``MediaDeviceError`` `unsupported` naming what the route takes.
    func acquireAudio(on session: MediaOutputSession, format: SampleBuffer.Format) async throws -> AudioAcquisition
    /// How a route plays (``RouteStatus``); nil when the session is not active.
    func routeStatus(on session: MediaOutputSession) async -> RouteStatus?
    /// How delivery on a route goes; nil when none was acquired.
    func audioStatistics(on session: MediaOutputSession) async -> RealtimeAudioStatistics?
    /// Opens one paced delivery for several routes that play as a group (one socket, one clock):
    /// each member starts later by how much less than the slowest it buffers (its lead, in the
    /// order of `sessions`); a member whose route ends leaves and the others play on.
    func acquireGroupAudio(on sessions: [MediaOutputSession], format: SampleBuffer.Format) async throws -> (acquisition: AudioAcquisition, leads: [Duration])
    /// Takes a route into the group `member` plays in, in sync from the next buffer (a device
    /// that came back, or one more room); returns its lead.
    /// - Throws: ``MediaDeviceError`` `deviceNotActive` when `member` plays in no group,
    ///   `unsupported` when the route does not take the group's format or buffers more than it.
    func joinGroupAudio(on session: MediaOutputSession, joining member: MediaOutputSession) async throws -> Duration
    /// Says what a route's real-time audio is; the device gets it now and with each new stream.
    /// - Throws: ``MediaDeviceError`` `unsupported` when the route takes no real-time audio.
    func setRealtimeNowPlaying(_ nowPlaying: RealtimeNowPlaying, on session: MediaOutputSession) async throws
    /// Opens real-time video of `format` on a route: the caller writes whole pictures into the
    /// returned descriptor at the format's rate and closes it to end the video.
    /// - Throws: ``MediaDeviceError`` `unsupported` when the route's device shows no video the box sends.
    func acquireVideo(on session: MediaOutputSession, format: VideoFrameFormat) async throws -> VideoAcquisition
    /// Ends a route's real-time video now.
    func releaseVideo(on session: MediaOutputSession) async
}

extension SystemRoutingBackend {
    /// Starts playback with no description but the URL.
    public func startSession(on session: MediaOutputSession, identifier: String?, url: URL) async throws -> any InterfaceControllable {
        try await startSession(on: session, identifier: identifier, url: url, metadata: PlaybackMetadata(contentURL: url))
    }
}
