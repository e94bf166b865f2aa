import Foundation
import RealtimeVideo
import Testing

/// The app's H.264 on bytes: real x264 streams (the fuzz seeds) and hand-made NAL units.
@Suite struct H264AccessUnitSplitterTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz/Corpus/h264")

    static func seed(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: corpus.appendingPathComponent(name))) }

    /// `bytes` through a splitter in pieces of `piece` bytes, then its end.
    static func split(_ bytes: [UInt8], piece: Int = .max, budget: Int = 1 << 20) throws(H264StreamError) -> [H264AccessUnit] {
        var splitter = H264AccessUnitSplitter(maximumAccessUnitBytes: budget)
        var units: [H264AccessUnit] = []
        var offset = 0
        while offset < bytes.count {
            let end = offset + min(piece, bytes.count - offset)
            let result = bytes[offset..<end].withUnsafeBytes { raw in Result { () throws(H264StreamError) in try splitter.append(raw) } }
            units += try result.get()
            offset = end
        }
        return units + (try splitter.finish())
    }

    static func types(_ unit: H264AccessUnit) -> [UInt8] { unit.units.map { $0.first! & 0x1F } }

    @Test func anX264BaselineStreamSplitsIntoItsPicturesWholeOrByteByByte() throws {
        let stream = try Self.seed("x264-baseline-32x32-3")
        let units = try Self.split(stream)
        #expect(units.count == 3)
        #expect(units.map(\.isIDR) == [true, false, true], "a GOP of 2")
        #expect(units[0].hasParameterSets && !units[1].hasParameterSets)
        #expect(Self.types(units[0]).prefix(3) == [7, 8, 6], "SPS, PPS, SEI before the IDR slice: \(Self.types(units[0]))")
        #expect(try Self.split(stream, piece: 1) == units)
        #expect(try Self.split(stream, piece: 7) == units)
        let parameters = try #require(try units[0].sequenceParameters())
        #expect(parameters == H264SequenceParameters(profile: 66, level: parameters.level, width: 32, height: 32))
        // Every byte is kept but the start codes: the NAL units' lengths add up.
        let kept = units.flatMap(\.units).reduce(0) { $0 + $1.count }
        #expect(kept > stream.count - 4 * 12 && kept < stream.count)
    }

    @Test func delimitersAreLeftOutAndAHighProfileSPSIsRead() throws {
        let units = try Self.split(try Self.seed("x264-high-aud-48x32-2"), piece: 100)
        #expect(units.count == 2)
        #expect(units.allSatisfy { !Self.types($0).contains(9) })
        let parameters = try #require(try units[0].sequenceParameters())
        #expect(parameters.profile == 100 && parameters.width == 48 && parameters.height == 32)
    }

    @Test func aCroppedSizeIsTheShownOne() throws {
        let parameters = try #require(try Self.split(try Self.seed("x264-cropped-30x18")).first?.sequenceParameters())
        #expect(parameters.width == 30 && parameters.height == 18)
    }

    @Test func bFramesAreRefused() throws {
        #expect(throws: H264StreamError.bidirectionalSlices) { try Self.split(try Self.seed("x264-bframes-32x32")) }
    }

    /// A slice NAL unit: header byte, then the slice header's first fields in Exp-Golomb.
    static func slice(idr: Bool, firstMacroblock: Int) -> [UInt8] {
        // first_mb_in_slice: ue(0) = 1, ue(3) = 00100; slice_type 7 (I) = ue(7) = 0001000.
        let header: [UInt8] = firstMacroblock == 0 ? [0b1000_1000, 0b0000_0000] : [0b0010_0000, 0b1000_0000]
        return [idr ? 0x65 : 0x41] + header + [0xAB, 0xCD, 0x80]
    }

    @Test func slicesOfOnePictureStayTogetherAndStartCodesOfEitherLengthWork() throws {
        let first = Self.slice(idr: true, firstMacroblock: 0)
        let second = Self.slice(idr: true, firstMacroblock: 3)
        let next = Self.slice(idr: false, firstMacroblock: 0)
        // Three-byte and four-byte start codes, trailing zeros after a unit.
        let stream = [0, 0, 1] + first + [0, 0, 0, 1] + second + [0, 0] + [0, 0, 1] + next
        let units = try Self.split(stream, piece: 2)
        #expect(units.count == 2)
        #expect(units[0].bytes == [0, 0, 0, 1] + first + [0, 0, 0, 1] + second)
        #expect(units[0].isIDR && !units[1].isIDR)
        #expect(units[1].bytes == [0, 0, 0, 1] + next)
    }

    @Test func emulationPreventionBytesAreSkippedWhenReadingAnSPS() throws {
        // profile 66, level 30, id 0, log2_max_frame_num 0, poc type 2, 0 refs, no gaps,
        // 1920×1080 as 120×68 macroblocks cropped by 8 rows: ue(119) ue(67), frames only, cropping (0,0,0,4).
        var bits = "1" + "1" + "011" + "1" + "0"
        bits += "0000001111000" + "0000001000100" + "1" + "1" + "1" + "1" + "1" + "1" + "00101" + "1"
        while bits.count % 8 != 0 { bits += "0" }
        var payload: [UInt8] = stride(from: 0, to: bits.count, by: 8).map { at in
            UInt8(bits.dropFirst(at).prefix(8), radix: 2)!
        }
        // The same fields with an emulation prevention byte where three zero bytes would follow.
        var unit: [UInt8] = [0x67, 66, 0, 30]
        unit += payload
        #expect(try H264SequenceParameters(unit: unit[...]) == H264SequenceParameters(profile: 66, level: 30, width: 1920, height: 1080))
        payload = [0x67, 66, 0, 0, 3] + payload  // constraint 0 and level 0, then an escape
        let escaped = try H264SequenceParameters(unit: payload[...])
        #expect(escaped.level == 0 && escaped.width == 1920 && escaped.height == 1080)
    }

    @Test func bytesThatAreNotAnnexBAreRefusedWithoutKeepingThem() throws {
        #expect(throws: H264StreamError.notAnnexB) { try Self.split([UInt8](repeating: 0x80, count: 5000), piece: 1000) }
        #expect(throws: H264StreamError.forbiddenBit) { try Self.split([0, 0, 1, 0xE5, 1, 2, 0, 0, 1, 0x41, 0x88]) }
        // A NAL unit that never ends is refused once past the budget, not kept growing.
        var splitter = H264AccessUnitSplitter(maximumAccessUnitBytes: 10_000)
        let start: [UInt8] = [0, 0, 1, 0x65, 0x88]
        _ = try start.withUnsafeBytes { raw in try Result { () throws(H264StreamError) in try splitter.append(raw) }.get() }
        let filler = [UInt8](repeating: 0x55, count: 4096)
        #expect(throws: H264StreamError.accessUnitTooLarge(limit: 10_000)) {
            for _ in 0..<3 { _ = try filler.withUnsafeBytes { raw in try Result { () throws(H264StreamError) in try splitter.append(raw) }.get() } }
        }
        // A slice header cut short.
        #expect(throws: H264StreamError.malformed("a header shorter than its fields")) { try Self.split([0, 0, 1, 0x65, 0x00]) }
    }
}
