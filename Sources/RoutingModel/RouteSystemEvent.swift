#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// What happened in the routing system, in order.
public enum RouteSystemEvent: Sendable {
    case discoveryStarted
    case discoveryStopped
    case deviceFound(SystemDevice)
    case deviceUpdated(SystemDevice)
    case deviceLost(SystemDevice)
    case discoveryFailed(MediaSharingProtocol, MediaDeviceError)
    /// Activation is about to try this member of a merged device, and why (preferred, first
    /// capable, or a fallback after the members before it failed).
    case protocolChosen(DeviceKey, reason: String)
    case activationStateChanged(DeviceKey, session: MediaOutputSession, state: ActivationState)
    case pairingRequested(PairingRequest)
    case activationFailed(DeviceKey, session: MediaOutputSession, error: MediaDeviceError)
    case routeActivated(ActiveRoute)
    /// The route ended; `reason` is nil for a requested deactivation.
    case routeDeactivated(ActiveRoute, reason: MediaDeviceError?)
    case sessionStarted(ActiveRoute, application: String?)
    /// A URL session ended; `reason` is nil for a requested stop.
    case sessionEnded(ActiveRoute, reason: MediaDeviceError?)
    case volumeChanged(ActiveRoute, volume: Float, muted: Bool)
    /// How the route plays changed (its codec, bit rate or declared latency; `RouteStatus` has
    /// them now): `reason` says what changed.
    case routeChanged(ActiveRoute, reason: String)
    /// Real-time audio on the route ended by its writer and played out: its last statistics.
    case audioEnded(ActiveRoute, statistics: RealtimeAudioStatistics)
    /// Data from the extension to the app (route data channel).
    case routeData(ActiveRoute, application: String, data: Data)
    /// Data from an application on the device to the app (session data channel).
    case sessionData(ActiveRoute, application: String, data: Data)
}
