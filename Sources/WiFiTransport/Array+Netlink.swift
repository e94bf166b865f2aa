

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
