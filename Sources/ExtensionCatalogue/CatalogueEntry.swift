public import BoxConfiguration

/// One protocol family the box can reach devices through, with its extension.
public enum CatalogueEntry: String, Sendable, Hashable, CaseIterable {
    /// UPnP/DLNA renderers (SSDP), AirPlay 1 receivers (RAOP, mDNS) and Google Cast
    /// receivers (mDNS, the Cast channel) on the LAN.
    case lan
    #if Bluetooth
    /// BLE speakers through BlueZ on the system bus.
    case bluez
    #endif
    #if WiFi
    /// Wi-Fi Display sinks and setup-mode devices through nl80211.
    case wifi
    #endif

    /// How a notice about it starts ("Bluetooth: BlueZ (org.bluez) is not running").
    public var noticeName: String {
        switch self {
        case .lan: "LAN"
        #if Bluetooth
        case .bluez: "Bluetooth"
        #endif
        #if WiFi
        case .wifi: "Wi-Fi"
        #endif
        }
    }

    /// Whether the box's configuration turns it on.
    public func isEnabled(in configuration: DaemonConfiguration) -> Bool {
        switch self {
        case .lan: configuration.lan.enabled
        #if Bluetooth
        case .bluez: configuration.bluetooth.enabled
        #endif
        #if WiFi
        case .wifi: configuration.wifi.enabled
        #endif
        }
    }
}
