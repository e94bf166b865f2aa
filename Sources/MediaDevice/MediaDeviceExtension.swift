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

    /// The codecs the person prefers for `device`, most preferred first, by the names the
    /// extension's protocol gives them (Bluetooth: `ldac`, `aptx_hd`, `aptx`, `aac`, `sbc`);
    /// empty: the box's configured order. An active route moves to the first of them its device
    /// takes, where the protocol can. Default: ignored (one codec per device).
    func setPreferredCodecs(_ codecs: [String], for device: MediaOutputDevice)
}

extension MediaDeviceExtension {
    public nonisolated var supportsSimultaneousSessions: Bool { false }

    public func setPreferredCodecs(_ codecs: [String], for device: MediaOutputDevice) {}

    public nonisolated var receivesRouteData: Bool { false }

    public func startSession(_ session: MediaOutputSession, identifier: String?, url: URL, metadata: PlaybackMetadata) {
        startSession(session, identifier: identifier, url: url)
    }

    public func unmuteDevice(_ device: MediaOutputDevice) {}

    public func receiveData(_ data: Data, fromApplication applicationIdentifier: String, session: MediaOutputSession) {}

    public func routeDetails(session: MediaOutputSession) -> RouteStatus.Details { RouteStatus.Details() }
}
