

/// 802.11 information elements of a beacon or probe response, and the Wi-Fi
/// Alliance vendor elements MediaRoute reads: P2P (Wi-Fi Direct) and Wi-Fi Display.
public struct InformationElements: Sendable, Hashable {
    /// One element: id and body.
    public struct Element: Sendable, Hashable {
        public var id: UInt8
        public var body: [UInt8]
    }

    public static let ssidID: UInt8 = 0
    public static let vendorID: UInt8 = 221
    /// The Wi-Fi Alliance OUI, with the vendor types of P2P and Wi-Fi Display.
    public static let wfaOUI: [UInt8] = [0x50, 0x6F, 0x9A]
    public static let p2pType: UInt8 = 9
    public static let wfdType: UInt8 = 10

    public var elements: [Element]

    /// Parses elements laid end to end (`id`, `length`, body).
    public static func parse(_ bytes: [UInt8]) throws(NetlinkParseError) -> InformationElements {
        var elements: [Element] = []
        var offset = 0
        while offset < bytes.count {
            guard bytes.count - offset >= 2 else { throw NetlinkParseError(.truncated, "element header at \(offset)") }
            let length = Int(bytes[offset + 1])
            guard length <= bytes.count - offset - 2 else {
                throw NetlinkParseError(.lengthOverflow, "element \(bytes[offset]) of \(length) bytes at \(offset), \(bytes.count - offset - 2) left")
            }
            elements.append(Element(id: bytes[offset], body: Array(bytes[(offset + 2)..<(offset + 2 + length)])))
            offset += 2 + length
        }
        return InformationElements(elements: elements)
    }

    /// The SSID (nil when absent; hidden networks send an empty one).
    public var ssid: String? {
        elements.first { $0.id == Self.ssidID }.map { String(decoding: $0.body, as: UTF8.self) }
    }

    /// The concatenated bodies (after OUI and type) of the Wi-Fi Alliance vendor
    /// elements of `type`: one logical element may be split over several.
    func vendorPayload(type: UInt8) -> [UInt8]? {
        let parts = elements.filter { $0.id == Self.vendorID && $0.body.count >= 4 && Array($0.body[0..<3]) == Self.wfaOUI && $0.body[3] == type }
        guard !parts.isEmpty else { return nil }
        return parts.flatMap { $0.body[4...] }
    }

    /// The P2P element, when there is one.
    public func p2p() throws(NetlinkParseError) -> P2PInformation? {
        guard let payload = vendorPayload(type: Self.p2pType) else { return nil }
        return try P2PInformation.parse(payload)
    }

    /// The Wi-Fi Display element, when there is one.
    public func wifiDisplay() throws(NetlinkParseError) -> WiFiDisplayInformation? {
        guard let payload = vendorPayload(type: Self.wfdType) else { return nil }
        return try WiFiDisplayInformation.parse(payload)
    }
}
