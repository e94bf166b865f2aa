import RealtimeVideo
import RoutingModel
import Testing

/// YUV4MPEG2 on bytes: what FFmpeg and GStreamer write, fed in any pieces; what is refused.
@Suite struct YUV4MPEG2ParserTests {
    func stream(frames: Int, header: String = "YUV4MPEG2 W32 H16 F30000:1001 Ip A1:1 C420jpeg XYSCSS=420JPEG") -> [UInt8] {
        var bytes = Array((header + "\n").utf8)
        for index in 0..<frames {
            bytes += Array("FRAME\n".utf8) + [UInt8](repeating: UInt8(index), count: 32 * 16 * 3 / 2)
        }
        return bytes
    }

    @Test func aStreamFedInPiecesGivesItsFormatAndWholeFrames() throws {
        let bytes = stream(frames: 3)
        for piece in [1, 7, 100, 1 << 20] {
            var parser = YUV4MPEG2Parser()
            var frames: [[UInt8]] = []
            var offset = 0
            while offset < bytes.count {
                let end = min(bytes.count, offset + piece)
                frames += try parser.feed(bytes[offset..<end])
                offset = end
            }
            try parser.finish()
            #expect(parser.format == (try VideoFrameFormat(encoding: .i420, width: 32, height: 16, frameRateNumerator: 30000, frameRateDenominator: 1001)))
            #expect(frames.map(\.first) == [0, 1, 2])
            #expect(frames.allSatisfy { $0.count == 768 })
        }
    }

    @Test func frameParametersAreReadAndIgnored() throws {
        var parser = YUV4MPEG2Parser()
        var bytes = Array("YUV4MPEG2 W16 H16 F25:1\nFRAME Ixyz\n".utf8) + [UInt8](repeating: 9, count: 384)
        bytes += Array("FRAME\n".utf8) + [UInt8](repeating: 8, count: 384)
        #expect(try parser.feed(bytes).count == 2)
    }

    @Test(arguments: [
        ("RIFF....", YUV4MPEG2Error.notYUV4MPEG2),
        ("YUV4MPEG2 W32 H16 F30:1 C422\n", .unsupportedColourSpace("422")),
        ("YUV4MPEG2 W32 F30:1\n", .badParameter("H missing")),
        ("YUV4MPEG2 W3x2 H16 F30:1\n", .badParameter("W3x2")),
        ("YUV4MPEG2 W32 H16 F30\n", .badParameter("F30")),
        ("YUV4MPEG2 W99999999999 H16 F30:1\n", .badParameter("W99999999999")),
    ])
    func badHeadersAreRefusedWithTheReason(header: String, error: YUV4MPEG2Error) {
        var parser = YUV4MPEG2Parser()
        #expect(throws: error) { _ = try parser.feed(Array(header.utf8)) }
    }

    @Test func sizesAndRatesOutOfRangeAreRefused() {
        for header in ["YUV4MPEG2 W33 H16 F30:1\n", "YUV4MPEG2 W32 H16 F0:1\n", "YUV4MPEG2 W32 H16 F1000:1\n", "YUV4MPEG2 W8192 H16 F30:1\n"] {
            var parser = YUV4MPEG2Parser()
            #expect(throws: YUV4MPEG2Error.self, "\(header)") { _ = try parser.feed(Array(header.utf8)) }
        }
    }

    @Test func aMissingFrameMarkerAndATruncatedFrameAreReported() throws {
        var parser = YUV4MPEG2Parser()
        #expect(throws: YUV4MPEG2Error.missingFrameMarker) { _ = try parser.feed(Array("YUV4MPEG2 W16 H16 F25:1\nFRAMEX\n".utf8)) }
        var truncated = YUV4MPEG2Parser()
        _ = try truncated.feed(Array("YUV4MPEG2 W16 H16 F25:1\nFRAME\n".utf8) + [1, 2, 3])
        #expect(throws: YUV4MPEG2Error.truncatedFrame(bytes: 3, expected: 384)) { try truncated.finish() }
    }

    @Test func anEndlessLineIsRefusedAtTheLimit() {
        var parser = YUV4MPEG2Parser()
        let line = Array("YUV4MPEG2 ".utf8) + [UInt8](repeating: 0x41, count: 5000)
        #expect(throws: YUV4MPEG2Error.lineTooLong(YUV4MPEG2Parser.maximumLineLength)) { _ = try parser.feed(line) }
    }

    @Test func theHeaderLineWrittenIsReadBack() throws {
        let format = try VideoFrameFormat(encoding: .i420, width: 640, height: 360, frameRateNumerator: 30000, frameRateDenominator: 1001)
        var parser = YUV4MPEG2Parser()
        _ = try parser.feed(YUV4MPEG2Parser.headerLine(for: format))
        #expect(parser.format == format)
    }
}
