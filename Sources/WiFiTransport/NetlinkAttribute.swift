

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
