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

/// What a Wi-Fi Direct device says about itself (P2P attributes: id, 2-byte little-endian length).
public struct P2PInformation: Sendable, Hashable {
    public static let capabilityAttribute: UInt8 = 2
    public static let deviceInfoAttribute: UInt8 = 13
    /// WPS attribute carrying the device name inside Device Info.
    static let wpsDeviceName: UInt16 = 0x1011

    public var deviceCapability: UInt8?
    public var groupCapability: UInt8?
    public var deviceAddress: [UInt8]?
    public var configMethods: UInt16?
    /// Primary device type category (7 Displays, 8 Multimedia devices, 11 Audio devices …).
    public var category: UInt16?
    public var subcategory: UInt16?
    public var deviceName: String?

    public static func parse(_ payload: [UInt8]) throws(NetlinkParseError) -> P2PInformation {
        var info = P2PInformation()
        var offset = 0
        while offset < payload.count {
            guard payload.count - offset >= 3 else { throw NetlinkParseError(.truncated, "P2P attribute header at \(offset)") }
            let id = payload[offset]
            let length = Int(payload.u16(at: offset + 1))
            guard length <= payload.count - offset - 3 else {
                throw NetlinkParseError(.lengthOverflow, "P2P attribute \(id) of \(length) bytes, \(payload.count - offset - 3) left")
            }
            let body = Array(payload[(offset + 3)..<(offset + 3 + length)])
            switch id {
            case capabilityAttribute:
                guard body.count >= 2 else { throw NetlinkParseError(.badValue, "P2P Capability of \(body.count) bytes") }
                info.deviceCapability = body[0]
                info.groupCapability = body[1]
            case deviceInfoAttribute:
                try info.parseDeviceInfo(body)
            default:
                break
            }
            offset += 3 + length
        }
        return info
    }

    /// Device Info: address (6), config methods (2, BE), primary type (8), secondary
    /// count (1) and types (8 each), then the name as a WPS TLV (type and length BE).
    private mutating func parseDeviceInfo(_ body: [UInt8]) throws(NetlinkParseError) {
        guard body.count >= 17 else { throw NetlinkParseError(.truncated, "P2P Device Info of \(body.count) bytes") }
        deviceAddress = Array(body[0..<6])
        configMethods = body.u16BigEndian(at: 6)
        category = body.u16BigEndian(at: 8)
        subcategory = body.u16BigEndian(at: 14)
        let secondaries = Int(body[16])
        let nameOffset = 17 + secondaries * 8
        guard nameOffset + 4 <= body.count else {
            throw NetlinkParseError(.lengthOverflow, "\(secondaries) secondary device types overrun Device Info")
        }
        guard body.u16BigEndian(at: nameOffset) == Self.wpsDeviceName else {
            throw NetlinkParseError(.badValue, "Device Info without a WPS device name")
        }
        let nameLength = Int(body.u16BigEndian(at: nameOffset + 2))
        guard nameOffset + 4 + nameLength <= body.count else {
            throw NetlinkParseError(.lengthOverflow, "device name of \(nameLength) bytes overruns Device Info")
        }
        deviceName = String(decoding: body[(nameOffset + 4)..<(nameOffset + 4 + nameLength)], as: UTF8.self)
    }
}

/// What a Wi-Fi Display (Miracast) device says (sub-elements: id, 2-byte big-endian length).
public struct WiFiDisplayInformation: Sendable, Hashable {
    public enum DeviceType: String, Sendable, Hashable {
        case source, primarySink, secondarySink, dualRole
    }

    public static let deviceInformationSubelement: UInt8 = 0

    public var deviceType: DeviceType
    public var sessionAvailable: Bool
    /// Content protection (HDCP 2.x) supported.
    public var supportsHDCP: Bool
    /// RTSP control port (7236 by default).
    public var controlPort: UInt16
    /// Maximum throughput in Mbit/s.
    public var maximumThroughput: UInt16

    public var isSink: Bool { deviceType != .source }

    public static func parse(_ payload: [UInt8]) throws(NetlinkParseError) -> WiFiDisplayInformation {
        var offset = 0
        var found: WiFiDisplayInformation?
        while offset < payload.count {
            guard payload.count - offset >= 3 else { throw NetlinkParseError(.truncated, "WFD sub-element header at \(offset)") }
            let id = payload[offset]
            let length = Int(payload.u16BigEndian(at: offset + 1))
            guard length <= payload.count - offset - 3 else {
                throw NetlinkParseError(.lengthOverflow, "WFD sub-element \(id) of \(length) bytes, \(payload.count - offset - 3) left")
            }
            if id == deviceInformationSubelement {
                guard length >= 6 else { throw NetlinkParseError(.badValue, "WFD Device Information of \(length) bytes") }
                let bitmap = payload.u16BigEndian(at: offset + 3)
                let type: DeviceType = switch bitmap & 0b11 {
                case 0: .source
                case 1: .primarySink
                case 2: .secondarySink
                default: .dualRole
                }
                found = WiFiDisplayInformation(
                    deviceType: type, sessionAvailable: (bitmap >> 4) & 0b11 == 0b01, supportsHDCP: bitmap & 0x100 != 0,
                    controlPort: payload.u16BigEndian(at: offset + 5), maximumThroughput: payload.u16BigEndian(at: offset + 7))
            }
            offset += 3 + length
        }
        guard let found else { throw NetlinkParseError(.badValue, "WFD element without Device Information") }
        return found
    }
}
