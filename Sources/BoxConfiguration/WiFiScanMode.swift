

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
