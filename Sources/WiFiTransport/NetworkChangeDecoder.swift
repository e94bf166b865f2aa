import CNetlink
import IOReactor
public import IPNetwork
import Logging
import Synchronization
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// Turns rtnetlink (and nl80211 MLME) messages into ``NetworkChange``s, keeping
/// each link's last state so that only transitions are reported. Pure: feed it bytes.
public struct NetworkChangeDecoder: Sendable {
    private var links: [Int32: (name: String, usable: Bool)] = [:]
    /// The nl80211 family id when its MLME group is followed.
    public var nl80211FamilyID: UInt16?

    public init(nl80211FamilyID: UInt16? = nil) {
        self.nl80211FamilyID = nl80211FamilyID
    }

    static let newLink: UInt16 = 16, deleteLink: UInt16 = 17, newAddress: UInt16 = 20, deleteAddress: UInt16 = 21
    static let ifnameAttribute: UInt16 = 3
    static let addressAttribute: UInt16 = 1, localAttribute: UInt16 = 2

    /// The changes in one datagram.
    public mutating func decode(_ bytes: [UInt8]) throws(NetlinkParseError) -> [NetworkChange] {
        var changes: [NetworkChange] = []
        for message in try NetlinkMessage.parse(bytes) {
            switch message.type {
            case Self.newLink, Self.deleteLink:
                guard message.payload.count >= 16 else { throw NetlinkParseError(.truncated, "ifinfomsg") }
                let index = Int32(bitPattern: message.payload.u32(at: 4))
                let flags = message.payload.u32(at: 8)
                let attributes = try NetlinkAttribute.parse(Array(message.payload[16...]))
                let name = attributes.first(Self.ifnameAttribute)?.string ?? links[index]?.name ?? "if\(index)"
                let usable = message.type == Self.newLink && flags & UInt32(MR_IFF_UP) != 0 && flags & UInt32(MR_IFF_RUNNING) != 0
                let before = links[index]?.usable ?? false
                if message.type == Self.deleteLink { links.removeValue(forKey: index) } else { links[index] = (name, usable) }
                if usable && !before { changes.append(.linkUp(interface: name, index: index)) }
                if !usable && before { changes.append(.linkDown(interface: name, index: index)) }
            case Self.newAddress, Self.deleteAddress:
                guard message.payload.count >= 8 else { throw NetlinkParseError(.truncated, "ifaddrmsg") }
                let family = message.payload[0]
                let index = Int32(bitPattern: message.payload.u32(at: 4))
                let attributes = try NetlinkAttribute.parse(Array(message.payload[8...]))
                guard let raw = (attributes.first(Self.localAttribute) ?? attributes.first(Self.addressAttribute))?.value else { continue }
                let address = Self.format(raw, family: family)
                let name = links[index]?.name ?? "if\(index)"
                changes.append(message.type == Self.newAddress
                    ? .addressAdded(interface: name, index: index, address: address)
                    : .addressRemoved(interface: name, index: index, address: address))
            case let type where type == nl80211FamilyID:
                let payload = try GenericNetlinkPayload.parse(message.payload)
                guard let index = try payload.attributes.first(UInt16(NL80211_ATTR_IFINDEX.rawValue))?.u32() else { continue }
                switch UInt32(payload.command) {
                case NL80211_CMD_CONNECT.rawValue: changes.append(.wifiConnected(index: Int32(bitPattern: index)))
                case NL80211_CMD_DISCONNECT.rawValue: changes.append(.wifiDisconnected(index: Int32(bitPattern: index)))
                case NL80211_CMD_ROAM.rawValue: changes.append(.wifiRoamed(index: Int32(bitPattern: index)))
                default: break
                }
            default:
                continue
            }
        }
        return changes
    }

    static func format(_ raw: [UInt8], family: UInt8) -> String {
        if family == UInt8(AF_INET), raw.count == 4 { return raw.map(String.init).joined(separator: ".") }
        guard raw.count == 16 else { return raw.map(hex).joined() }
        var groups: [String] = []
        for index in stride(from: 0, to: 16, by: 2) { groups.append(String(UInt16(raw[index]) << 8 | UInt16(raw[index + 1]), radix: 16)) }
        return groups.joined(separator: ":")
    }
}
