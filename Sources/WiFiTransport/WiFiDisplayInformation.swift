

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
