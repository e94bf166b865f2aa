

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
