#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import Logging
public import MediaDevice
public import RoutingModel
public import Transport
import WiFiTransport

/// Devices found at the Wi-Fi layer: Wi-Fi Display (Miracast) sinks, shown as
/// screen-mirroring targets, and speakers or TVs in setup mode.
///
/// Activation is not supported yet (Miracast sessions and device setup are
/// separate work): the devices carry an `unavailableReason`, so the system lists
/// them as unavailable and never activates them. When the kernel has
/// no nl80211, discovery fails once with the reason and the other protocols run on.
public actor WiFiDisplayExtension: MediaDeviceExtension {
    public static let defaultProtocol = MediaSharingProtocol("org.mediaroute.wifi-display", displayName: "Wi-Fi Display")

    public nonisolated let protocolType: MediaSharingProtocol
    private let transport: any Transport
    private let routingManager: MediaDeviceRoutingManager
    private let logger: Logger
    private let discovery = DiscoveryDriver()
    private var known = DiscoveredDevices()

    public init(transport: any Transport, routingManager: MediaDeviceRoutingManager,
                protocolType: MediaSharingProtocol = WiFiDisplayExtension.defaultProtocol,
                logger: Logger = Logger(label: "mediaroute.extension.wifi-display")) {
        self.transport = transport
        self.routingManager = routingManager
        self.protocolType = protocolType
        self.logger = logger
    }

    /// The device for a Wi-Fi endpoint: a sink with the type of its P2P category
    /// and real-time video; a setup access point with no capability until set up.
    public static func device(for endpoint: Endpoint) -> MediaOutputDevice? {
        let name = endpoint.name ?? endpoint.id
        switch endpoint.facts.kind {
        case .wifiDisplaySink:
            let type = MediaOutputDevice.DeviceType(rawValue: endpoint.attributes["deviceType"] ?? "") ?? .unknown
            // Listed so the person sees it, but never offered as a route until mirroring exists.
            return MediaOutputDevice(
                id: endpoint.id, displayName: name, capabilities: [.realtimeVideoStreaming], deviceType: type == .unknown ? .tv : type,
                requiredNetworkEndpoints: [endpoint], unavailableReason: "screen mirroring (Miracast) is not supported yet")
        case .setupAccessPoint:
            return MediaOutputDevice(
                id: endpoint.id, displayName: "\(name) (needs setup)", capabilities: [], requiredNetworkEndpoints: [endpoint],
                unavailableReason: "in setup mode; set it up with its own app first")
        default:
            return nil
        }
    }

    public func startDeviceDiscovery() {
        discovery.start(transport) { await self.handle($0) }
    }

    public func stopDeviceDiscovery() {
        discovery.stop()
    }

    private func handle(_ event: DiscoveryEvent) {
        if let error = known.apply(event, to: routingManager, failurePrefix: "Wi-Fi: ", device: Self.device(for:)) {
            logger.notice("Wi-Fi discovery unavailable: \(error.message)")
        }
    }

    public func activateDevice(_ device: MediaOutputDevice, session: MediaOutputSession, for deviceFeatures: MediaOutputDevice.Capabilities) {
        let message = device.requiredNetworkEndpoints.first?.facts.kind == .setupAccessPoint
            ? "\(device.displayName) must be set up first; setup over its access point is not supported yet"
            : "screen mirroring to \(device.displayName) (Miracast) is not supported yet"
        routingManager.failedToActivateDevice(device, session: session, error: MediaDeviceError(.unsupported, message))
    }

    public func connectUsingPairingCode(_ pairingCode: String?, to device: MediaOutputDevice, session: MediaOutputSession) {}
    public func deactivateDevice(_ device: MediaOutputDevice, session: MediaOutputSession) {}
    public func setVolume(_ volume: Float, for device: MediaOutputDevice) {}
    public func volume(for device: MediaOutputDevice) -> Float { 0 }
    public func changeVolume(by increments: Int, for device: MediaOutputDevice) {}
    public func muteDevice(_ device: MediaOutputDevice) {}
    public func isDeviceMuted(_ device: MediaOutputDevice) -> Bool { false }

    public func startSession(_ session: MediaOutputSession, identifier: String?, url: URL) {
        routingManager.sessionFailed(session, error: MediaDeviceError(.unsupported, "Wi-Fi Display devices do not play URLs"))
    }

    public func stopSession(_ session: MediaOutputSession) {}
    public func sendData(_ data: Data, toApplication applicationIdentifier: String, session: MediaOutputSession) {}
}
