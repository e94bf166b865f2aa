/// Reads the bits of a NAL unit's payload (H.264 7.2): emulation prevention bytes (`00 00 03`)
/// are skipped, Exp-Golomb codes (9.1) decoded; reading past the end throws, never traps.
struct RBSPBitReader {
    private var payload: [UInt8] = []
    private var bit = 0

    /// `unit` without its one-byte NAL header; at most `limit` bytes of it are read.
    init(unit: ArraySlice<UInt8>, limit: Int) {
        var zeros = 0
        payload.reserveCapacity(min(unit.count, limit))
        for byte in unit.dropFirst().prefix(limit) {
            if zeros >= 2, byte == 3 {
                zeros = 0
                continue
            }
            zeros = byte == 0 ? zeros + 1 : 0
            payload.append(byte)
        }
    }

    mutating func flag() throws(H264StreamError) -> Bool { try bits(1) == 1 }

    mutating func bits(_ count: Int) throws(H264StreamError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<count {
            guard bit >> 3 < payload.count else { throw .malformed("a header shorter than its fields") }
            value = value << 1 | UInt32((payload[bit >> 3] >> (7 - UInt8(bit & 7))) & 1)
            bit += 1
        }
        return value
    }

    /// ue(v), at most 2³¹ − 2 (longer codes are no H.264 a picture of 4096×2304 needs).
    mutating func unsigned() throws(H264StreamError) -> UInt32 {
        var leadingZeros = 0
        while try !flag() {
            leadingZeros += 1
            guard leadingZeros < 31 else { throw .malformed("an Exp-Golomb code of more than 31 bits") }
        }
        return (UInt32(1) << leadingZeros) - 1 + (try bits(leadingZeros))
    }

    /// se(v).
    mutating func signed() throws(H264StreamError) -> Int32 {
        let code = try unsigned()
        return code & 1 == 1 ? Int32(code / 2 + 1) : -Int32(code / 2)
    }
}
