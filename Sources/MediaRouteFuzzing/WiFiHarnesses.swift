import CNetlink
import IPNetwork
import WiFiTransport

/// Netlink from the kernel and, inside it, information elements from any radio in range.
enum WiFiHarnesses {
    static let all: [FuzzHarness] = [scanDump, informationElements, networkChanges]

    /// nl80211's family id on the test machines; any value works, the harness only needs one.
    static let familyID: UInt16 = 28
    static let mapper = WiFiDeviceMapper(setupSSIDPatterns: ["Sonos_*", "*Setup*?", "TV-????-*"])

    static let scanDump = FuzzHarness("nl80211-scan", "nl80211 scan dumps: netlink, generic netlink, attributes, BSS, IEs") { bytes in
        guard let results = try? ScanResult.parseDump(bytes, familyID: familyID) else { return nil }
        for result in results { _ = mapper.endpoint(for: result) }
        return nil
    }

    /// The elements alone (most of a scan result's bytes come from the air).
    static let informationElements = FuzzHarness("information-elements", "802.11 IEs, P2P and Wi-Fi Display attributes, SSIDs", maximumLength: 4 * 1024) { bytes in
        guard let elements = try? InformationElements.parse(bytes) else { return nil }
        _ = elements.ssid
        _ = try? elements.p2p()
        _ = try? elements.wifiDisplay()
        // As a scan result around these elements would carry them, to reach the device mapper
        // (SSID patterns, device categories) with whatever a radio says.
        let bss = NetlinkAttribute(type: UInt16(NL80211_ATTR_BSS.rawValue), nested: [
            NetlinkAttribute(type: UInt16(NL80211_BSS_BSSID.rawValue), value: [0x02, 0, 0, 0, 0, 1]),
            NetlinkAttribute(type: UInt16(NL80211_BSS_FREQUENCY.rawValue), u32: 2412),
            NetlinkAttribute(type: UInt16(NL80211_BSS_SIGNAL_MBM.rawValue), u32: UInt32(bitPattern: -4_200)),
            NetlinkAttribute(type: UInt16(NL80211_BSS_INFORMATION_ELEMENTS.rawValue), value: bytes),
        ])
        guard let result = try? ScanResult.parse(GenericNetlinkPayload(command: UInt8(NL80211_CMD_NEW_SCAN_RESULTS.rawValue), attributes: [bss])) else {
            return "elements that parse alone failed inside a scan result"
        }
        if result.elements != elements { return "the scan result's elements differ from the elements parsed alone" }
        _ = mapper.endpoint(for: result)
        return nil
    }

    static let networkChanges = FuzzHarness("rtnetlink", "rtnetlink link and address notifications") { bytes in
        var decoder = NetworkChangeDecoder(nl80211FamilyID: familyID)
        _ = try? decoder.decode(bytes)
        return nil
    }
}
