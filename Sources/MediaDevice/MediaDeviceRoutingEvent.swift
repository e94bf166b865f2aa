public import RoutingModel
#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// What an extension reports to the system, in the order it reported it.
public enum MediaDeviceRoutingEvent: Sendable {
    case foundDevice(MediaOutputDevice)
    case lostDevice(MediaOutputDevice)
    case updateDevices([MediaOutputDevice])
    case discoveryFailed(MediaDeviceError)
    case activatedDevice(MediaOutputDevice, session: MediaOutputSession)
    case failedToActivateDevice(MediaOutputDevice, session: MediaOutputSession, error: MediaDeviceError)
    case requestPairingCode(
        device: MediaOutputDevice, session: MediaOutputSession, reason: String,
        authorizationMethod: MediaOutputDevice.AuthorizationMethod)
    case started(application: String?, playbackControl: PlaybackControl, session: MediaOutputSession)
    case sessionFailed(MediaOutputSession, error: MediaDeviceError)
    case volumeChanged(MediaOutputDevice, volume: Float, muted: Bool)
    /// How the route plays changed (its codec, bit rate, declared latency): `reason` says what
    /// changed, as people read it; ``MediaDeviceExtension/routeDetails(session:)`` has the rest.
    case routeChanged(MediaOutputSession, reason: String)
    /// Data from the extension itself to the app (route data channel).
    case sendData(Data, toApplication: String, session: MediaOutputSession)
    /// Data from an application on the device to the app (session data channel).
    case receivedData(Data, fromApplication: String, session: MediaOutputSession)
}
