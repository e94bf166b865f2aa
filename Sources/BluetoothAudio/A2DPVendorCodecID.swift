/// The header every vendor-specific A2DP codec element starts with: a 32-bit Bluetooth SIG
/// company identifier and a 16-bit codec id, both little-endian.
public struct A2DPVendorCodecID: Sendable, Hashable, CustomStringConvertible {
    public var vendor: UInt32
    public var codec: UInt16

    public static let aptX = A2DPVendorCodecID(vendor: 0x0000_004F, codec: 0x0001)  // APT Ltd.
    public static let aptXHD = A2DPVendorCodecID(vendor: 0x0000_00D7, codec: 0x0024)  // Qualcomm
    public static let ldac = A2DPVendorCodecID(vendor: 0x0000_012D, codec: 0x00AA)  // Sony

    public init(vendor: UInt32, codec: UInt16) {
        self.vendor = vendor
        self.codec = codec
    }

    /// The identifier at the start of `bytes`; nil when they are shorter than six bytes.
    public init?(bytes: [UInt8]) {
        guard bytes.count >= 6 else { return nil }
        vendor = UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24
        codec = UInt16(bytes[4]) | UInt16(bytes[5]) << 8
    }

    public var bytes: [UInt8] {
        [UInt8(truncatingIfNeeded: vendor), UInt8(truncatingIfNeeded: vendor >> 8), UInt8(truncatingIfNeeded: vendor >> 16),
         UInt8(truncatingIfNeeded: vendor >> 24), UInt8(truncatingIfNeeded: codec), UInt8(truncatingIfNeeded: codec >> 8)]
    }

    public var description: String { "vendor 0x\(String(vendor, radix: 16)) codec 0x\(String(codec, radix: 16))" }
}
