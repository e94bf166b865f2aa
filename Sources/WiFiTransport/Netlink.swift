/// Why netlink bytes could not be parsed. Every parser here is total: malformed
/// input gives one of these, never a crash or a read past the buffer.
public struct NetlinkParseError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// Fewer bytes than a header needs.
        case truncated
        /// A length field points past the end of its container.
        case lengthOverflow
        /// A length field is smaller than its own header.
        case lengthTooSmall
        /// Attributes nested deeper than allowed.
        case nestedTooDeep
        /// A value has the wrong size for its type.
        case badValue
    }

    public var code: Code
    public var detail: String

    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { "\(code.rawValue): \(detail)" }
}

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

/// A generic netlink payload: `genlmsghdr` (command, version) then attributes.
public struct GenericNetlinkPayload: Sendable, Hashable {
    public var command: UInt8
    public var version: UInt8
    public var attributes: [NetlinkAttribute]

    public init(command: UInt8, version: UInt8 = 1, attributes: [NetlinkAttribute]) {
        self.command = command
        self.version = version
        self.attributes = attributes
    }

    public static func parse(_ payload: [UInt8]) throws(NetlinkParseError) -> GenericNetlinkPayload {
        guard payload.count >= 4 else { throw NetlinkParseError(.truncated, "genlmsghdr") }
        return GenericNetlinkPayload(command: payload[0], version: payload[1], attributes: try NetlinkAttribute.parse(Array(payload[4...])))
    }

    public var bytes: [UInt8] { [command, version, 0, 0] + attributes.flatMap(\.bytes) }
}

/// One netlink attribute (`nlattr`): type and value; nested attributes are parsed on demand.
public struct NetlinkAttribute: Sendable, Hashable {
    public static let nestedFlag: UInt16 = 0x8000
    public static let byteOrderFlag: UInt16 = 0x4000
    /// Deepest nesting a parser follows.
    public static let maximumDepth = 8

    /// The type without the nested/byte-order flags.
    public var type: UInt16
    public var value: [UInt8]

    public init(type: UInt16, value: [UInt8]) {
        self.type = type & ~(Self.nestedFlag | Self.byteOrderFlag)
        self.value = value
    }

    public init(type: UInt16, nested: [NetlinkAttribute]) {
        self.init(type: type, value: nested.flatMap(\.bytes))
    }

    public init(type: UInt16, u32: UInt32) {
        var value: [UInt8] = []
        value.appendU32(u32)
        self.init(type: type, value: value)
    }

    /// Attributes laid end to end (each 4-byte aligned).
    public static func parse(_ bytes: [UInt8]) throws(NetlinkParseError) -> [NetlinkAttribute] {
        var attributes: [NetlinkAttribute] = []
        var offset = 0
        while offset < bytes.count {
            guard bytes.count - offset >= 4 else {
                // Trailing padding shorter than a header is allowed; anything else is truncation.
                if bytes[offset...].allSatisfy({ $0 == 0 }) { break }
                throw NetlinkParseError(.truncated, "nlattr at \(offset)")
            }
            let length = Int(bytes.u16(at: offset))
            guard length >= 4 else { throw NetlinkParseError(.lengthTooSmall, "nla_len \(length) at \(offset)") }
            guard length <= bytes.count - offset else {
                throw NetlinkParseError(.lengthOverflow, "nla_len \(length) at \(offset), \(bytes.count - offset) bytes left")
            }
            attributes.append(NetlinkAttribute(type: bytes.u16(at: offset + 2), value: Array(bytes[(offset + 4)..<(offset + length)])))
            offset += align4(length)
        }
        return attributes
    }

    /// The value as nested attributes; `depth` counts the levels already entered.
    public func nested(depth: Int = 1) throws(NetlinkParseError) -> [NetlinkAttribute] {
        guard depth <= Self.maximumDepth else { throw NetlinkParseError(.nestedTooDeep, "more than \(Self.maximumDepth) levels") }
        return try Self.parse(value)
    }

    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.appendU16(UInt16(4 + value.count))
        out.appendU16(type)
        out += value
        while out.count % 4 != 0 { out.append(0) }
        return out
    }

    public func u32() throws(NetlinkParseError) -> UInt32 {
        guard value.count == 4 else { throw NetlinkParseError(.badValue, "attribute \(type): \(value.count) bytes for a u32") }
        return value.u32(at: 0)
    }

    public func u16() throws(NetlinkParseError) -> UInt16 {
        guard value.count == 2 else { throw NetlinkParseError(.badValue, "attribute \(type): \(value.count) bytes for a u16") }
        return value.u16(at: 0)
    }

    public func u64() throws(NetlinkParseError) -> UInt64 {
        guard value.count == 8 else { throw NetlinkParseError(.badValue, "attribute \(type): \(value.count) bytes for a u64") }
        return UInt64(value.u32(at: 0)) | UInt64(value.u32(at: 4)) << 32
    }

    /// A NUL-terminated string (the NUL optional).
    public var string: String { String(decoding: value.prefix { $0 != 0 }, as: UTF8.self) }
}

extension Array where Element == NetlinkAttribute {
    public func first(_ type: UInt16) -> NetlinkAttribute? { first { $0.type == type } }
}

@inline(__always) func align4(_ value: Int) -> Int { (value + 3) & ~3 }

extension Array where Element == UInt8 {
    /// Host byte order (little-endian on every Linux MediaRoute targets), as netlink uses.
    func u16(at offset: Int) -> UInt16 { UInt16(self[offset]) | UInt16(self[offset + 1]) << 8 }
    func u32(at offset: Int) -> UInt32 { UInt32(u16(at: offset)) | UInt32(u16(at: offset + 2)) << 16 }
    func u16BigEndian(at offset: Int) -> UInt16 { UInt16(self[offset]) << 8 | UInt16(self[offset + 1]) }

    mutating func appendU16(_ value: UInt16) { append(UInt8(value & 0xFF)); append(UInt8(value >> 8)) }
    mutating func appendU32(_ value: UInt32) { appendU16(UInt16(value & 0xFFFF)); appendU16(UInt16(value >> 16)) }
}
