

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
