import CNetlink
import Transport
import WiFiTransport

/// Builders for real bytes: information elements, nl80211 attributes, netlink messages.
public enum Bytes {
    public static let familyID: UInt16 = 0x1c

    public static func element(_ id: UInt8, _ body: [UInt8]) -> [UInt8] { [id, UInt8(body.count)] + body }

    public static func ssid(_ name: String) -> [UInt8] { element(0, Array(name.utf8)) }

    /// A P2P element: Capability, then Device Info with a name and a primary device type.
    public static func p2p(name: String, category: UInt16, subcategory: UInt16 = 1, secondaryTypes: Int = 0, address: [UInt8] = [0x02, 0x11, 0x22, 0x33, 0x44, 0x55]) -> [UInt8] {
        var info = address + [0x01, 0x88]
        info += [UInt8(category >> 8), UInt8(category & 0xFF), 0x00, 0x50, 0xF2, 0x04, UInt8(subcategory >> 8), UInt8(subcategory & 0xFF)]
        info += [UInt8(secondaryTypes)] + Array(repeating: 0xAB, count: secondaryTypes * 8)
        let nameBytes = Array(name.utf8)
        info += [0x10, 0x11, 0x00, UInt8(nameBytes.count)] + nameBytes
        var attributes: [UInt8] = [2, 2, 0, 0x25, 0x01]
        attributes += [13, UInt8(info.count & 0xFF), UInt8(info.count >> 8)] + info
        return element(221, [0x50, 0x6F, 0x9A, 9] + attributes)
    }

    /// A Wi-Fi Display element with Device Information.
    public static func wfd(bitmap: UInt16, port: UInt16 = 7236, throughput: UInt16 = 300) -> [UInt8] {
        let info: [UInt8] = [0, 0, 6, UInt8(bitmap >> 8), UInt8(bitmap & 0xFF), UInt8(port >> 8), UInt8(port & 0xFF), UInt8(throughput >> 8), UInt8(throughput & 0xFF)]
        return element(221, [0x50, 0x6F, 0x9A, 10] + info)
    }

    /// One scan-dump message for a BSS.
    public static func scanMessage(bssid: [UInt8], frequency: UInt32, signal: Int32, seenAgo: UInt32 = 10, elements: [UInt8], ifindex: UInt32 = 3) -> [UInt8] {
        let bss = NetlinkAttribute(type: UInt16(NL80211_ATTR_BSS.rawValue), nested: [
            NetlinkAttribute(type: UInt16(NL80211_BSS_BSSID.rawValue), value: bssid),
            NetlinkAttribute(type: UInt16(NL80211_BSS_FREQUENCY.rawValue), u32: frequency),
            NetlinkAttribute(type: UInt16(NL80211_BSS_SIGNAL_MBM.rawValue), u32: UInt32(bitPattern: signal)),
            NetlinkAttribute(type: UInt16(NL80211_BSS_SEEN_MS_AGO.rawValue), u32: seenAgo),
            NetlinkAttribute(type: UInt16(NL80211_BSS_INFORMATION_ELEMENTS.rawValue), value: elements),
        ])
        let payload = GenericNetlinkPayload(command: UInt8(NL80211_CMD_NEW_SCAN_RESULTS.rawValue), attributes: [
            NetlinkAttribute(type: UInt16(NL80211_ATTR_IFINDEX.rawValue), u32: ifindex), bss,
        ])
        return NetlinkMessage(type: familyID, flags: 2, sequence: 7, payload: payload.bytes).bytes
    }

    public static var done: [UInt8] { NetlinkMessage(type: NetlinkMessage.done, payload: [0, 0, 0, 0]).bytes }

    public static let tvBSSID: [UInt8] = [0x02, 0xAA, 0xBB, 0xCC, 0xDD, 0x01]
    public static var tvElements: [UInt8] { ssid("DIRECT-xy-Living Room TV") + p2p(name: "Living Room TV", category: 7) + wfd(bitmap: 0b0001_0001 | 0x100) }
}

/// A radio in a test: each scan returns the next scripted result list.
public actor ScriptedScanner: WiFiScanning {
    public var script: [[ScanResult]]
    public var scans: [(index: UInt32, p2p: Bool)] = []

    public init(_ script: [[ScanResult]]) { self.script = script }

    public func scan(interfaceIndex: UInt32, p2p: Bool) async throws(TransportUnavailable) -> [ScanResult] {
        scans.append((interfaceIndex, p2p))
        return script.isEmpty ? [] : script.removeFirst()
    }
}

/// The scan result in one nl80211 `NEW_SCAN_RESULTS` message.
public func scanResult(_ bytes: [UInt8]) throws -> ScanResult {
    try ScanResult.parse(try GenericNetlinkPayload.parse(try NetlinkMessage.parse(bytes)[0].payload))
}
