import CNetlink

/// One BSS from an nl80211 scan dump (`NL80211_CMD_NEW_SCAN_RESULTS` messages).
public struct ScanResult: Sendable, Hashable {
    /// `aa:bb:cc:dd:ee:ff`.
    public var bssid: String
    public var frequency: UInt32
    /// Signal in mBm (dBm × 100), when the driver reports it.
    public var signalMBm: Int32?
    public var seenMillisecondsAgo: UInt32?
    public var interfaceIndex: UInt32?
    /// Probe response (or beacon) elements; beacon elements when only those came.
    public var elements: InformationElements
    public var beaconElements: InformationElements?

    /// Parses the generic netlink payload of one scan-dump message.
    public static func parse(_ payload: GenericNetlinkPayload) throws(NetlinkParseError) -> ScanResult {
        let attributes = payload.attributes
        guard let bss = attributes.first(UInt16(NL80211_ATTR_BSS.rawValue)) else {
            throw NetlinkParseError(.badValue, "scan result without NL80211_ATTR_BSS")
        }
        let fields = try bss.nested()
        guard let bssidAttribute = fields.first(UInt16(NL80211_BSS_BSSID.rawValue)), bssidAttribute.value.count == 6 else {
            throw NetlinkParseError(.badValue, "BSS without a 6-byte BSSID")
        }
        guard let frequency = try fields.first(UInt16(NL80211_BSS_FREQUENCY.rawValue))?.u32() else {
            throw NetlinkParseError(.badValue, "BSS without a frequency")
        }
        let elements = try fields.first(UInt16(NL80211_BSS_INFORMATION_ELEMENTS.rawValue)).map { attribute throws(NetlinkParseError) in
            try InformationElements.parse(attribute.value)
        }
        let beacon = try fields.first(UInt16(NL80211_BSS_BEACON_IES.rawValue)).map { attribute throws(NetlinkParseError) in
            try InformationElements.parse(attribute.value)
        }
        return ScanResult(
            bssid: bssidAttribute.value.map { hex($0) }.joined(separator: ":"),
            frequency: frequency,
            signalMBm: try fields.first(UInt16(NL80211_BSS_SIGNAL_MBM.rawValue)).map { attribute throws(NetlinkParseError) in Int32(bitPattern: try attribute.u32()) },
            seenMillisecondsAgo: try fields.first(UInt16(NL80211_BSS_SEEN_MS_AGO.rawValue))?.u32(),
            interfaceIndex: try attributes.first(UInt16(NL80211_ATTR_IFINDEX.rawValue))?.u32(),
            elements: elements ?? beacon ?? InformationElements(elements: []),
            beaconElements: beacon)
    }

    /// Parses a whole dump: every message, skipping DONE; the first malformed one fails the dump.
    public static func parseDump(_ bytes: [UInt8], familyID: UInt16) throws(NetlinkParseError) -> [ScanResult] {
        var results: [ScanResult] = []
        for message in try NetlinkMessage.parse(bytes) where message.type == familyID {
            results.append(try parse(try GenericNetlinkPayload.parse(message.payload)))
        }
        return results
    }
}

func hex(_ byte: UInt8) -> String {
    let digits = Array("0123456789abcdef")
    return String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 0x0F)])
}
