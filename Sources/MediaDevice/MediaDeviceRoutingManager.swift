public import RoutingModel
#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// How an extension reports to the system.
///
/// Every call is `Sendable`, safe from any task, and returns at once: it
/// enqueues the event into the system actor, which handles each extension's
/// events in the order they were reported.
public struct MediaDeviceRoutingManager: Sendable {
    private let sink: @Sendable (MediaDeviceRoutingEvent) -> Void

    /// A manager whose events go to `sink`; the system makes one per loaded extension.
    public init(sink: @escaping @Sendable (MediaDeviceRoutingEvent) -> Void) {
        self.sink = sink
    }

    /// A newly discovered device; reporting a known id again updates it.
    public func foundDevice(_ device: MediaOutputDevice) { sink(.foundDevice(device)) }
    /// A previously reported device is gone; its sessions end.
    public func lostDevice(_ device: MediaOutputDevice) { sink(.lostDevice(device)) }
    /// Known devices whose properties changed.
    public func updateDevices(_ devices: [MediaOutputDevice]) { sink(.updateDevices(devices)) }
    /// Discovery failed unexpectedly (not: "no devices found").
    public func discoveryFailed(_ error: MediaDeviceError) { sink(.discoveryFailed(error)) }

    /// The device is connected and paired; the route is active.
    public func activatedDevice(_ device: MediaOutputDevice, session: MediaOutputSession) {
        sink(.activatedDevice(device, session: session))
    }

    /// Activation failed; the device returns to idle.
    public func failedToActivateDevice(_ device: MediaOutputDevice, session: MediaOutputSession, error: MediaDeviceError) {
        sink(.failedToActivateDevice(device, session: session, error: error))
    }

    /// Asks the person for a pairing code; the answer arrives in `connectUsingPairingCode`.
    public func requestPairingCode(
        for device: MediaOutputDevice, session: MediaOutputSession, reason: String,
        authorizationMethod: MediaOutputDevice.AuthorizationMethod
    ) {
        sink(.requestPairingCode(device: device, session: session, reason: reason, authorizationMethod: authorizationMethod))
    }

    /// Playback started; the system observes and commands it through `playbackControl`.
    public func started(application: String?, playbackControl: PlaybackControl, session: MediaOutputSession) {
        sink(.started(application: application, playbackControl: playbackControl, session: session))
    }

    /// The session's playback could not start or broke.
    public func sessionFailed(_ session: MediaOutputSession, error: MediaDeviceError) {
        sink(.sessionFailed(session, error: error))
    }

    /// The device's volume (0.0–1.0) or mute changed, by itself or confirming a
    /// request; the values travel with the report, so the system need not ask back.
    /// How the route plays changed (a codec switch, a bit-rate step, a new latency).
    public func routeChanged(_ session: MediaOutputSession, reason: String) { sink(.routeChanged(session, reason: reason)) }

    public func volumeChanged(for device: MediaOutputDevice, volume: Float, muted: Bool) {
        sink(.volumeChanged(device, volume: volume, muted: muted))
    }

    /// Sends data from the extension to the app on the route data channel.
    public func sendData(_ data: Data, toApplication applicationIdentifier: String, session: MediaOutputSession) {
        sink(.sendData(data, toApplication: applicationIdentifier, session: session))
    }

    /// Delivers data from an application on the device to the app's session data channel.
    public func receivedData(_ data: Data, fromApplication applicationIdentifier: String, session: MediaOutputSession) {
        sink(.receivedData(data, fromApplication: applicationIdentifier, session: session))
    }
}
