/// What a sequence parameter set (H.264 7.3.2.1.1) says about the pictures: their size after
/// cropping, profile and level. Read to check an app's stream against the format it declared,
/// and by `mediaroutectl mirror` to learn a file's size.
public struct H264SequenceParameters: Sendable, Hashable {
    public var profile: UInt8
    public var level: UInt8
    public var width: Int
    public var height: Int

    public init(profile: UInt8, level: UInt8, width: Int, height: Int) {
        self.profile = profile
        self.level = level
        self.width = width
        self.height = height
    }

    /// Profiles whose SPS carries chroma format, bit depths and scaling matrices.
    private static let highProfiles: Set<UInt8> = [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135]

    /// - Parameter unit: the SPS NAL unit, header byte first, no start code.
    public init(unit: ArraySlice<UInt8>) throws(H264StreamError) {
        guard let header = unit.first, header & 0x1F == 7 else { throw .malformed("not a sequence parameter set") }
        var reader = RBSPBitReader(unit: unit, limit: 1024)
        profile = UInt8(try reader.bits(8))
        _ = try reader.bits(8)
        level = UInt8(try reader.bits(8))
        guard try reader.unsigned() <= 31 else { throw .malformed("an SPS id over 31") }
        var chromaFormat: UInt32 = 1
        if Self.highProfiles.contains(profile) {
            chromaFormat = try reader.unsigned()
            guard chromaFormat == 1 else { throw .unsupported("chroma format \(chromaFormat)") }
            let lumaDepth = try reader.unsigned()
            let chromaDepth = try reader.unsigned()
            guard lumaDepth == 0, chromaDepth == 0 else { throw .unsupported("\(lumaDepth + 8)-bit") }
            _ = try reader.flag()
            if try reader.flag() {
                for list in 0..<8 {
                    guard try reader.flag() else { continue }
                    var last: Int32 = 8
                    var next: Int32 = 8
                    for _ in 0..<(list < 6 ? 16 : 64) where next != 0 {
                        let delta = try reader.signed()
                        guard (-128...127).contains(delta) else { throw .malformed("a scaling list delta of \(delta)") }
                        next = (last + delta + 256) % 256
                        last = next == 0 ? last : next
                    }
                }
            }
        }
        guard try reader.unsigned() <= 12 else { throw .malformed("log2_max_frame_num over 16") }
        switch try reader.unsigned() {
        case 0:
            guard try reader.unsigned() <= 12 else { throw .malformed("log2_max_pic_order_cnt_lsb over 16") }
        case 1:
            _ = try reader.flag()
            _ = try reader.signed()
            _ = try reader.signed()
            let cycle = try reader.unsigned()
            guard cycle <= 255 else { throw .malformed("a picture order cycle of \(cycle)") }
            for _ in 0..<cycle { _ = try reader.signed() }
        case 2:
            break
        case let type:
            throw .malformed("picture order count type \(type)")
        }
        _ = try reader.unsigned()
        _ = try reader.flag()
        let widthInBlocks = try reader.unsigned() + 1
        let heightInUnits = try reader.unsigned() + 1
        let framesOnly = try reader.flag()
        if !framesOnly { _ = try reader.flag() }
        _ = try reader.flag()
        // Sizes in 16-pixel blocks up to 8192 pixels: the products below cannot overflow.
        guard widthInBlocks <= 512, heightInUnits <= 512 else { throw .malformed("pictures of \(widthInBlocks)×\(heightInUnits) macroblocks") }
        var width = Int(widthInBlocks) * 16
        var height = Int(heightInUnits) * 16 * (framesOnly ? 1 : 2)
        if try reader.flag() {
            let crops = [try reader.unsigned(), try reader.unsigned(), try reader.unsigned(), try reader.unsigned()]
            guard crops.allSatisfy({ $0 <= 8192 }) else { throw .malformed("a cropping window larger than the picture") }
            // 4:2:0: two luma samples per crop unit across, two (four for fields) down.
            width -= 2 * Int(crops[0] + crops[1])
            height -= 2 * (framesOnly ? 1 : 2) * Int(crops[2] + crops[3])
            guard width > 0, height > 0 else { throw .malformed("a cropping window larger than the picture") }
        }
        self.width = width
        self.height = height
    }
}
