

/// Which transport uses an adapter.
public enum AdapterTransport: String, Sendable, Hashable, CaseIterable, Codable {
    /// Wired (or any non-Wi-Fi) network interface: SSDP, mDNS, sockets.
    case lan
    /// Wi-Fi interface: LAN discovery on it, plus nl80211 scans.
    case wifi
    /// Bluetooth controller through BlueZ.
    case bluetooth
    /// Not used by MediaRoute.
    case none
}
