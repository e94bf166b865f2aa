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

/// Which adapter of a transport to prefer when there are several.
public enum AdapterRole: String, Sendable, Hashable, CaseIterable, Codable {
    case primary
    case secondary
    /// Known but used only when no primary or secondary adapter is up.
    case standby
}

/// How the Wi-Fi transport scans.
public enum WiFiScanMode: String, Sendable, Hashable, CaseIterable, Codable {
    case off
    /// Listen to beacons only.
    case passive
    /// Send probe requests.
    case active
    /// Probe for Wi-Fi Direct (P2P/Miracast) devices on the social channels.
    case p2p
}

/// The settings of one transport in the configuration file, and the defaults
/// every adapter of that transport starts from.
public struct TransportSettings: Sendable, Hashable {
    public var enabled: Bool
    public var role: AdapterRole
    /// Wi-Fi only.
    public var scanMode: WiFiScanMode
    /// Bluetooth only: the controller to use when several are present (nil: the first).
    public var preferredAdapter: String?

    public init(enabled: Bool = true, role: AdapterRole = .primary, scanMode: WiFiScanMode = .passive, preferredAdapter: String? = nil) {
        self.enabled = enabled
        self.role = role
        self.scanMode = scanMode
        self.preferredAdapter = preferredAdapter
    }
}

/// The udev properties the rules set and the daemon reads, per device.
public enum UdevProperty {
    public static let transport = "MEDIAROUTE_TRANSPORT"
    public static let enabled = "MEDIAROUTE_ENABLED"
    public static let role = "MEDIAROUTE_ROLE"
    public static let wifiScan = "MEDIAROUTE_WIFI_SCAN"

    public static let all = [transport, enabled, role, wifiScan]

    /// Whether `value` is valid for `key` (a MediaRoute property); the error text otherwise.
    public static func validate(_ key: String, _ value: String) -> String? {
        switch key {
        case transport:
            AdapterTransport(rawValue: value) == nil ? "\(key) must be one of \(AdapterTransport.allCases.map(\.rawValue).joined(separator: ", ")), not \"\(value)\"" : nil
        case enabled:
            ["0", "1"].contains(value) ? nil : "\(key) must be 0 or 1, not \"\(value)\""
        case role:
            AdapterRole(rawValue: value) == nil ? "\(key) must be one of \(AdapterRole.allCases.map(\.rawValue).joined(separator: ", ")), not \"\(value)\"" : nil
        case wifiScan:
            WiFiScanMode(rawValue: value) == nil ? "\(key) must be one of \(WiFiScanMode.allCases.map(\.rawValue).joined(separator: ", ")), not \"\(value)\"" : nil
        default:
            "unknown MediaRoute property \(key) (known: \(all.joined(separator: ", ")))"
        }
    }
}
