import MediaDevice
import RoutingModel
import RealtimeAudio
import Testing

/// A RIFF/WAVE header: `fmt ` with the given fields, optional chunks before it, then `data`.
func wavHeader(
    tag: UInt16 = 1, channels: UInt16 = 2, rate: UInt32 = 44_100, bits: UInt16 = 16, dataLength: UInt32 = 4,
    extensible: UInt16? = nil, before: [UInt8] = []
) -> [UInt8] {
    func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
    func le32(_ value: UInt32) -> [UInt8] { le16(UInt16(value & 0xFFFF)) + le16(UInt16(value >> 16)) }
    let align = channels * (bits / 8)
    var fmt = le16(extensible == nil ? tag : 0xFFFE) + le16(channels) + le32(rate) + le32(rate * UInt32(align)) + le16(align) + le16(bits)
    if let extensible {
        fmt += le16(22) + le16(bits) + le32(3) + le16(extensible) + [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]
    }
    let body = Array("WAVE".utf8) + before + Array("fmt ".utf8) + le32(UInt32(fmt.count)) + fmt + Array("data".utf8) + le32(dataLength)
    return Array("RIFF".utf8) + le32(UInt32(body.count) + 4) + body
}

@Suite struct WAVHeaderTests {
    @Test func pcm16AndFloat32() throws {
        let s16 = try #require(try WAVHeader.parse(wavHeader() + [1, 2, 3, 4]))
        #expect(s16.format == .cdAudio)
        #expect(s16.dataOffset == 44)
        #expect(s16.dataLength == 4)
        let f32 = try #require(try WAVHeader.parse(wavHeader(tag: 3, channels: 1, rate: 48_000, bits: 32)))
        #expect(f32.format == SampleBuffer.Format(encoding: .pcmF32LE, sampleRate: 48_000, channels: 1))
        let extensible = try #require(try WAVHeader.parse(wavHeader(bits: 16, extensible: 1)))
        #expect(extensible.format == .cdAudio)
    }

    @Test func chunksBeforeTheFormatAreSkippedAndAStreamHasNoLength() throws {
        let list = Array("LIST".utf8) + [5, 0, 0, 0] + Array("INFOx".utf8) + [0]  // odd size: padded
        let header = try #require(try WAVHeader.parse(wavHeader(dataLength: 0xFFFF_FFFF, before: list)))
        #expect(header.dataOffset == 44 + list.count)
        #expect(header.dataLength == nil, "ffmpeg writes 0xFFFFFFFF to a pipe")
    }

    @Test func moreBytesAreAskedForUntilTheSamplesStart() throws {
        let full = wavHeader()
        for cut in [0, 4, 11, 12, 20, 30, 43] {
            #expect(try WAVHeader.parse(full.prefix(cut)) == nil, "cut at \(cut)")
        }
        #expect(try WAVHeader.parse(full) != nil)
    }

    @Test func whatCannotBeSentIsRefusedBeforeAnyByteGoes() {
        #expect(throws: WAVHeader.Failure.notRIFFWave) { try WAVHeader.parse(Array("ID3\u{3}".utf8)) }
        #expect(throws: WAVHeader.Failure.notRIFFWave) { try WAVHeader.parse(Array("RIFF\u{0}\u{0}\u{0}\u{0}AVI ".utf8)) }
        #expect(throws: WAVHeader.Failure.unsupportedEncoding(formatTag: 1, bitsPerSample: 24)) { try WAVHeader.parse(wavHeader(bits: 24)) }
        #expect(throws: WAVHeader.Failure.unsupportedEncoding(formatTag: 85, bitsPerSample: 16)) { try WAVHeader.parse(wavHeader(tag: 85)) }
        #expect(throws: WAVHeader.Failure.badChannelCount(0)) { try WAVHeader.parse(wavHeader(channels: 0)) }
        #expect(throws: WAVHeader.Failure.badSampleRate(1)) { try WAVHeader.parse(wavHeader(rate: 1)) }
        // Samples before the format, and a chunk claiming 4 GB that pushes the samples out of reach.
        let noFormat = Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WAVEdata".utf8) + [0, 0, 0, 0]
        #expect(throws: WAVHeader.Failure.noFormatChunk) { try WAVHeader.parse(noFormat) }
        let huge = Array("junk".utf8) + [0xFF, 0xFF, 0xFF, 0xFF]
        #expect(throws: WAVHeader.Failure.headerTooLong) { try WAVHeader.parse(wavHeader(before: huge) + [UInt8](repeating: 0, count: 70_000)) }
    }
}
