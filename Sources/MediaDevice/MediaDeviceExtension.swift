public import RoutingModel
#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A sharing protocol's implementation: discovery, activation and playback for its devices.
///
/// The system calls an extension and the call returns quickly; the outcome
/// arrives later through the extension's ``MediaDeviceRoutingManager``
/// (`activatedDevice`, `failedToActivateDevice`, `requestPairingCode`,
/// `started`, …). That lets one activation span a pairing prompt and keeps a
/// slow device from blocking the system. Extensions are actors: each owns its
/// protocol clients and is reached only through these calls.
///
/// The system gives an extension its routing manager when it loads it (see
/// `RouteSystem.load(_:)`); keep it in a stored property.
public protocol MediaDeviceExtension: Actor {
    /// The protocol this extension speaks. Validated when the extension is
    /// loaded: non-empty, reverse-DNS, unique among loaded extensions.
    nonisolated var protocolType: MediaSharingProtocol { get }

    /// Whether the extension can run more than one ``MediaOutputSession`` at once.
    nonisolated var supportsSimultaneousSessions: Bool { get }

    /// Starts protocol discovery; report devices with `foundDevice`.
    func startDeviceDiscovery()
    /// Stops discovery and releases its resources.
    func stopDeviceDiscovery()

    /// Connects to the device; report `activatedDevice`, `failedToActivateDevice`
    /// or `requestPairingCode`.
    func activateDevice(
        _ device: MediaOutputDevice, session: MediaOutputSession, for deviceFeatures: MediaOutputDevice.Capabilities)
    /// Authenticates with the person's input; nil means the person cancelled.
    func connectUsingPairingCode(_ pairingCode: String?, to device: MediaOutputDevice, session: MediaOutputSession)
    /// Disconnects and releases everything tied to the session.
    func deactivateDevice(_ device: MediaOutputDevice, session: MediaOutputSession)

    /// Sets an absolute volume, 0.0–1.0 (devices with absolute volume control).
    func setVolume(_ volume: Float, for device: MediaOutputDevice)
    /// The device's current volume, 0.0–1.0.
    func volume(for device: MediaOutputDevice) -> Float
    /// Raises or lowers the volume by steps (devices with relative volume control).
    func changeVolume(by increments: Int, for device: MediaOutputDevice)
    /// Mutes the device.
    func muteDevice(_ device: MediaOutputDevice)
    /// Unmutes the device.
    func unmuteDevice(_ device: MediaOutputDevice)
    /// Whether the device is muted.
    func isDeviceMuted(_ device: MediaOutputDevice) -> Bool

    /// Begins playback of `url` on the device; report `started` or `sessionFailed`.
    func startSession(_ session: MediaOutputSession, identifier: String?, url: URL)
    /// Starts playback with what the app says it plays (title, artist, album, artwork,
    /// duration, live): an extension whose protocol carries it (DIDL-Lite for UPnP)
    /// implements this one; the default ignores the metadata.
    func startSession(_ session: MediaOutputSession, identifier: String?, url: URL, metadata: PlaybackMetadata)
    /// Stops playback for the session.
    func stopSession(_ session: MediaOutputSession)

    /// Forwards data from the app to the named application on the device.
    func sendData(_ data: Data, toApplication applicationIdentifier: String, session: MediaOutputSession)
    /// Data from the app addressed to the extension itself (the route data channel).
    func receiveData(_ data: Data, fromApplication applicationIdentifier: String, session: MediaOutputSession)

    /// Whether ``receiveData(_:fromApplication:session:)`` does something: when false (the
    /// default) the system refuses route-channel sends with a typed error instead of dropping them.
    nonisolated var receivesRouteData: Bool { get }

    /// How the extension plays an active route (protocol version, timing, codec, bit rate,
    /// declared latency), for ``RouteStatus``. Default: nothing said.
    func routeDetails(session: MediaOutputSession) -> RouteStatus.Details
}

extension MediaDeviceExtension {
    public nonisolated var supportsSimultaneousSessions: Bool { false }

    public nonisolated var receivesRouteData: Bool { false }

    public func startSession(_ session: MediaOutputSession, identifier: String?, url: URL, metadata: PlaybackMetadata) {
        startSession(session, identifier: identifier, url: url)
    }

    public func unmuteDevice(_ device: MediaOutputDevice) {}

    public func receiveData(_ data: Data, fromApplication applicationIdentifier: String, session: MediaOutputSession) {}

    public func routeDetails(session: MediaOutputSession) -> RouteStatus.Details { RouteStatus.Details() }
}

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
}

extension RealtimeSampleHandling {
    public func realtimeAudioSupport(session: MediaOutputSession) -> RealtimeAudioSupport { .standard }
    public func flushRealtimeSamples(session: MediaOutputSession) {}
    public func updateRealtimeNowPlaying(_ nowPlaying: RealtimeNowPlaying, session: MediaOutputSession) {}
}

