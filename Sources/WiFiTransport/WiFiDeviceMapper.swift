public import Transport

/// What discovery makes of scan results: Wi-Fi Display sinks become devices,
/// access points whose SSID matches a setup pattern become devices that need setup.
public struct WiFiDeviceMapper: Sendable {
    /// SSID patterns of speakers and TVs in setup mode (`*` any run, `?` one character), e.g. `Sonos_*`.
    public var setupSSIDPatterns: [String]

    public init(setupSSIDPatterns: [String] = []) {
        self.setupSSIDPatterns = setupSSIDPatterns
    }

    /// The device type by the P2P primary device category.
    public static func deviceType(category: UInt16?) -> String {
        switch category {
        case 7: "tv"            // Displays
        case 8: "setTopBox"     // Multimedia devices
        case 11: "speaker"      // Audio devices
        case 1: "computer"
        default: "unknown"
        }
    }

    /// The endpoint for one scan result, or nil when it is nothing MediaRoute shows.
    /// A result whose elements are malformed is skipped (it is the radio's problem, not ours).
    public func endpoint(for result: ScanResult) -> Endpoint? {
        let index = Int32(bitPattern: result.interfaceIndex ?? 0)
        let signal = result.signalMBm.map { Int($0) / 100 }
        if let display = try? result.elements.wifiDisplay() ?? result.beaconElements?.wifiDisplay(), display.isSink {
            let p2p = (try? result.elements.p2p()) ?? nil
            let name = p2p?.deviceName ?? result.elements.ssid ?? result.bssid
            var attributes = [
                "deviceType": Self.deviceType(category: p2p?.category),
                "wfdDeviceType": display.deviceType.rawValue,
                "sessionAvailable": display.sessionAvailable ? "1" : "0",
                "hdcp": display.supportsHDCP ? "1" : "0",
                "rtspPort": "\(display.controlPort)",
                "capability": "realtimeVideoStreaming",
                "frequency": "\(result.frequency)",
            ]
            if let address = p2p?.deviceAddress { attributes["p2pDeviceAddress"] = address.map(hex).joined(separator: ":") }
            return Endpoint(id: "wfd:" + (attributes["p2pDeviceAddress"] ?? result.bssid), transport: "wifi",
                            address: .wifi(bssid: result.bssid, interfaceIndex: index), name: name, signalStrength: signal, attributes: attributes,
                            services: ["wfd"], facts: EndpointFacts(kind: .wifiDisplaySink))
        }
        if let ssid = result.elements.ssid, !ssid.isEmpty, setupSSIDPatterns.contains(where: { Self.matches(ssid, pattern: $0) }) {
            return Endpoint(id: "setup:" + result.bssid, transport: "wifi", address: .wifi(bssid: result.bssid, interfaceIndex: index),
                            name: ssid, signalStrength: signal,
                            attributes: ["state": "needsSetup", "frequency": "\(result.frequency)"], facts: EndpointFacts(kind: .setupAccessPoint))
        }
        return nil
    }

    /// Glob matching with `*` and `?` (no character classes), iterative, linear-ish in practice.
    public static func matches(_ text: String, pattern: String) -> Bool {
        let t = Array(text), p = Array(pattern)
        var ti = 0, pi = 0, star = -1, mark = 0
        while ti < t.count {
            if pi < p.count && (p[pi] == "?" || p[pi] == t[ti]) {
                ti += 1
                pi += 1
            } else if pi < p.count && p[pi] == "*" {
                star = pi
                mark = ti
                pi += 1
            } else if star >= 0 {
                pi = star + 1
                mark += 1
                ti = mark
            } else {
                return false
            }
        }
        while pi < p.count && p[pi] == "*" { pi += 1 }
        return pi == p.count
    }
}
