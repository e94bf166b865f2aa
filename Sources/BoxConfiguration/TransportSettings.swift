

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
