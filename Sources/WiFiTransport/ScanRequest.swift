import CNetlink

/// Builds `NL80211_CMD_TRIGGER_SCAN` requests.
public enum ScanRequest {
    /// The 2.4 GHz social channels (1, 6, 11) where P2P devices listen.
    public static let socialChannels: [UInt32] = [2412, 2437, 2462]
    /// OFDM rates in 500 kbit/s units: 6, 9, 12, 18, 24, 36, 48, 54 Mbit/s (no CCK).
    public static let ofdmRates: [UInt8] = [12, 18, 24, 36, 48, 72, 96, 108]

    /// Our own P2P element for probe requests: Capability and a Device Info naming the box.
    public static func p2pElement(deviceAddress: [UInt8], name: String) -> [UInt8] {
        var attributes: [UInt8] = []
        // Capability: device capability 0x25 (service discovery, client discoverability… kept minimal), group 0.
        attributes += [P2PInformation.capabilityAttribute, 2, 0, 0x25, 0x00]
        var info: [UInt8] = Array(deviceAddress.prefix(6)) + Array(repeating: 0, count: max(0, 6 - deviceAddress.count))
        info += [0x01, 0x88]  // config methods: display, push button, keypad
        info += [0x00, 0x01, 0x00, 0x50, 0xF2, 0x04, 0x00, 0x01]  // primary type: Computer / PC (WPS OUI)
        info += [0x00]  // no secondary types
        let nameBytes = Array(name.utf8.prefix(32))
        info += [0x10, 0x11, UInt8(nameBytes.count >> 8), UInt8(nameBytes.count & 0xFF)] + nameBytes
        attributes += [P2PInformation.deviceInfoAttribute, UInt8(info.count & 0xFF), UInt8(info.count >> 8)] + info
        let body = InformationElements.wfaOUI + [InformationElements.p2pType] + attributes
        return [InformationElements.vendorID, UInt8(body.count)] + body
    }

    /// The generic netlink payload of a scan trigger on `interfaceIndex`; the P2P
    /// mode asks for `DIRECT-` on the social channels with OFDM rates only and our P2P element.
    public static func trigger(interfaceIndex: UInt32, p2p: Bool, p2pElement: [UInt8] = []) -> GenericNetlinkPayload {
        var attributes = [NetlinkAttribute(type: UInt16(NL80211_ATTR_IFINDEX.rawValue), u32: interfaceIndex)]
        if p2p {
            attributes.append(NetlinkAttribute(type: UInt16(NL80211_ATTR_SCAN_SSIDS.rawValue), nested: [
                NetlinkAttribute(type: 1, value: Array("DIRECT-".utf8)),
            ]))
            attributes.append(NetlinkAttribute(type: UInt16(NL80211_ATTR_SCAN_FREQUENCIES.rawValue), nested: socialChannels.enumerated().map {
                NetlinkAttribute(type: UInt16($0.offset + 1), u32: $0.element)
            }))
            attributes.append(NetlinkAttribute(type: UInt16(NL80211_ATTR_SCAN_SUPP_RATES.rawValue), nested: [
                NetlinkAttribute(type: UInt16(NL80211_BAND_2GHZ.rawValue), value: ofdmRates),
            ]))
            attributes.append(NetlinkAttribute(type: UInt16(NL80211_ATTR_TX_NO_CCK_RATE.rawValue), value: []))
            if !p2pElement.isEmpty { attributes.append(NetlinkAttribute(type: UInt16(NL80211_ATTR_IE.rawValue), value: p2pElement)) }
        } else {
            // A wildcard SSID: an active scan of every channel.
            attributes.append(NetlinkAttribute(type: UInt16(NL80211_ATTR_SCAN_SSIDS.rawValue), nested: [NetlinkAttribute(type: 1, value: [])]))
        }
        return GenericNetlinkPayload(command: UInt8(NL80211_CMD_TRIGGER_SCAN.rawValue), version: 0, attributes: attributes)
    }
}
