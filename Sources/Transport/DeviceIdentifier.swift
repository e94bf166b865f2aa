/// An identifier a protocol gives one physical device: what lets the routing system
/// show a TV reached over UPnP and over Cast, or a speaker over BLE and A2DP, as one entry.
///
/// Values are normalised when made (MAC and Bluetooth addresses lower-case with colons,
/// UDNs lower-case), so equal identities compare equal.
public enum DeviceIdentifier: Sendable, Hashable, Codable, CustomStringConvertible {
    /// A UPnP Unique Device Name (`uuid:…`).
    case udn(String)
    /// An Ethernet or Wi-Fi MAC address the device announces (UPnP description, DIAL, a TXT `deviceid`).
    case mac(String)
    /// A Bluetooth device address.
    case bluetooth(String)
    /// An IP address of the device within one discovery neighbourhood (one interface's LAN).
    case ipAddress(String)
    /// A simulated loopback device, by name: merges only with other simulated devices.
    case simulated(String)

    /// Which kind of identifier this is: two devices with identifiers of the same kind and
    /// no value in common are two different devices.
    public var kind: String {
        switch self {
        case .udn: "udn"
        case .mac: "mac"
        case .bluetooth: "bluetooth"
        case .ipAddress: "ip"
        case .simulated: "simulated"
        }
    }

    public var description: String {
        switch self {
        case .udn(let value), .mac(let value), .bluetooth(let value), .ipAddress(let value), .simulated(let value): "\(kind):\(value)"
        }
    }

    /// A MAC or Bluetooth address as `aa:bb:cc:dd:ee:ff`, or nil when `text` is not six hex octets
    /// (separated by `:` or `-`, or not at all).
    public static func normalizedAddress(_ text: String) -> String? {
        let hex = text.lowercased().filter { $0 != ":" && $0 != "-" }
        guard hex.count == 12, hex.allSatisfy(\.isHexDigit) else { return nil }
        var octets: [Substring] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            octets.append(hex[index..<next])
            index = next
        }
        return octets.joined(separator: ":")
    }
}

extension Endpoint {
    /// Attribute keys whose value is a MAC address the device announces (DNS-SD TXT `deviceid`
    /// of AirPlay, a `mac` learned from a description or DIAL).
    public static let macAttributeKeys = ["deviceid", "mac", "macAddress"]

    /// Every identifier of the device behind this endpoint: those discovery recorded in
    /// ``identifiers``, and those its address and attributes imply.
    public var allIdentifiers: Set<DeviceIdentifier> {
        var all = Set(identifiers)
        switch address {
        case .loopback(let name): all.insert(.simulated(name))
        case .ip(let host, _, _): all.insert(.ipAddress(host.lowercased()))
        case .bluetooth(let address, _, _):
            all.insert(.bluetooth(DeviceIdentifier.normalizedAddress(address) ?? address.lowercased()))
        case .wifi(let bssid, _):
            if let mac = DeviceIdentifier.normalizedAddress(bssid) { all.insert(.mac(mac)) }
        }
        if transport == "lan", id.lowercased().hasPrefix("uuid:") { all.insert(.udn(id.lowercased())) }
        for key in Self.macAttributeKeys {
            if let value = attributes[key], let mac = DeviceIdentifier.normalizedAddress(value) { all.insert(.mac(mac)) }
        }
        return all
    }
}
