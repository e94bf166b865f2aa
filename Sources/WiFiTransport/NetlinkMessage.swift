

/// One netlink message: `nlmsghdr` and its payload.
public struct NetlinkMessage: Sendable, Hashable {
    public static let headerSize = 16

    public var type: UInt16
    public var flags: UInt16
    public var sequence: UInt32
    public var portID: UInt32
    /// The bytes after the header (for generic netlink: `genlmsghdr` then attributes).
    public var payload: [UInt8]

    public init(type: UInt16, flags: UInt16 = 0, sequence: UInt32 = 0, portID: UInt32 = 0, payload: [UInt8]) {
        self.type = type
        self.flags = flags
        self.sequence = sequence
        self.portID = portID
        self.payload = payload
    }

    /// The messages in one datagram (netlink packs several, each 4-byte aligned).
    public static func parse(_ bytes: [UInt8]) throws(NetlinkParseError) -> [NetlinkMessage] {
        var messages: [NetlinkMessage] = []
        var offset = 0
        while offset < bytes.count {
            guard bytes.count - offset >= headerSize else { throw NetlinkParseError(.truncated, "nlmsghdr at \(offset)") }
            let length = Int(bytes.u32(at: offset))
            guard length >= headerSize else { throw NetlinkParseError(.lengthTooSmall, "nlmsg_len \(length) at \(offset)") }
            guard length <= bytes.count - offset else {
                throw NetlinkParseError(.lengthOverflow, "nlmsg_len \(length) at \(offset), \(bytes.count - offset) bytes left")
            }
            messages.append(NetlinkMessage(
                type: bytes.u16(at: offset + 4), flags: bytes.u16(at: offset + 6), sequence: bytes.u32(at: offset + 8),
                portID: bytes.u32(at: offset + 12), payload: Array(bytes[(offset + headerSize)..<(offset + length)])))
            offset += align4(length)
        }
        return messages
    }

    /// The message's bytes (for building test input and requests).
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.appendU32(UInt32(Self.headerSize + payload.count))
        out.appendU16(type)
        out.appendU16(flags)
        out.appendU32(sequence)
        out.appendU32(portID)
        out += payload
        while out.count % 4 != 0 { out.append(0) }
        return out
    }

    /// Netlink's own message types.
    public static let error: UInt16 = 2
    public static let done: UInt16 = 3
}
