import Foundation
import RAOP
import Testing

@testable import RAOPExtension

@Suite struct ALACEncoderTests {
    /// 352 frames of a 440 Hz tone, stereo S16LE, starting at frame `offset`.
    private func tonePacket(offset: Int) -> [UInt8] {
        (offset..<(offset + 352)).flatMap { frame -> [UInt8] in
            let value = Int16(sin(Double(frame) * 2 * .pi * 440 / 44_100) * 12_000)
            return [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)]
        }
    }

    @Test func ffmpegCompressesEachPacketOf352Frames() throws {
        let encoder = ALACEncoder()
        guard encoder.fallbackReason == nil else {
            // CI installs libavcodec (scripts/install-deps.sh): there, this never skips.
            print("skipping: FFmpeg's ALAC encoder is not available (\(encoder.fallbackReason!)); apt-get install libavcodec59")
            return
        }
        #expect(encoder.configuration.formatParameters.hasPrefix("352 0 16 "), "\(encoder.configuration)")
        #expect(encoder.configuration.channels == 2 && encoder.configuration.sampleRate == 44_100)
        let uncompressed = ALACUncompressed.frame(stereoS16LE: tonePacket(offset: 0)[...]).count
        var sizes: [Int] = []
        for packet in 0..<50 { sizes.append(encoder.encode(tonePacket(offset: packet * 352)[...]).count) }
        #expect(sizes.allSatisfy { $0 > 0 && $0 < uncompressed * 3 / 4 }, "a tone compresses: \(sizes) against \(uncompressed) bytes uncompressed")
        // A short last packet is encoded too.
        #expect(encoder.encode(tonePacket(offset: 0)[..<400]).count > 0)
    }

    @Test func silenceIsAFewBytes() {
        let encoder = ALACEncoder()
        guard encoder.fallbackReason == nil else {
            print("skipping: FFmpeg's ALAC encoder is not available (\(encoder.fallbackReason!))")
            return
        }
        let frame = encoder.encode([UInt8](repeating: 0, count: 352 * 4)[...])
        #expect(frame.count < 64, "\(frame.count) bytes")
    }
}
