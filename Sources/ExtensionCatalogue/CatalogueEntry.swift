import AdapterInventory
import BLESpeakerExtension
import BlueZTransport
public import BoxConfiguration
import CastExtension
import DBus
import LANTransport
import Logging
import MediaClock
import MediaDevice
import RoutingModel
import RAOPExtension
import RouteSystem
import UPnPRendererExtension
import WiFiDisplayExtension
import WiFiTransport

/// One protocol family the box can reach devices through, with its extension.
public enum CatalogueEntry: String, Sendable, Hashable, CaseIterable {
    /// UPnP/DLNA renderers (SSDP), AirPlay 1 receivers (RAOP, mDNS) and Google Cast
    /// receivers (mDNS, the Cast channel) on the LAN.
    case lan
    /// BLE speakers through BlueZ on the system bus.
    case bluez
    /// Wi-Fi Display sinks and setup-mode devices through nl80211.
    case wifi

    /// How a notice about it starts ("Bluetooth: BlueZ (org.bluez) is not running").
    public var noticeName: String {
        switch self {
        case .lan: "LAN"
        case .bluez: "Bluetooth"
        case .wifi: "Wi-Fi"
        }
    }

    /// Whether the box's configuration turns it on.
    public func isEnabled(in configuration: DaemonConfiguration) -> Bool {
        switch self {
        case .lan: configuration.lan.enabled
        case .bluez: configuration.bluetooth.enabled
        case .wifi: configuration.wifi.enabled
        }
    }
}
