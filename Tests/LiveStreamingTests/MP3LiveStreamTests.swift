import Foundation
import LiveStreaming
import MediaRouteTestSupport
import RoutingModel
import Testing

/// MP3 live streams on bytes: FFmpeg's `libmp3lame` (opened at run time), checked with FFmpeg's
/// decoder from Debian, for a reader from the start and one that joins mid-stream.
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg")))
struct MP3LiveStreamTests {
    let flac = FLACLiveStreamTests()

    /// Decoded back to 16-bit stereo by `ffmpeg -f mp3`.
    func decode(_ mp3: [UInt8]) throws -> [UInt8] {
        try runTool("/usr/bin/ffmpeg", ["-v", "error", "-f", "mp3", "-i", "pipe:0", "-f", "s16le", "-ac", "2", "-ar", "44100", "pipe:1"], input: mp3)
    }

    /// The MPEG audio frame headers in `bytes`: (offset, bit rate kbit/s, sample rate) of each.
    func frameHeaders(_ bytes: [UInt8]) -> [(offset: Int, kbps: Int, rate: Int)] {
        let rates = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 0]
        let sampleRates = [44_100, 48_000, 32_000, 0]
        var found: [(Int, Int, Int)] = []
        var offset = 0
        while offset + 4 <= bytes.count {
            // MPEG-1 Layer III: sync (11 bits), version 11, layer 01.
            guard bytes[offset] == 0xFF, bytes[offset + 1] & 0xFE == 0xFA else { break }
            let kbps = rates[Int(bytes[offset + 2] >> 4)]
            let rate = sampleRates[Int(bytes[offset + 2] >> 2 & 3)]
            let padding = Int(bytes[offset + 2] >> 1 & 1)
            guard kbps > 0, rate > 0 else { break }
            found.append((offset, kbps, rate))
            offset += 144 * kbps * 1000 / rate + padding
        }
        return found
    }

    @Test func aToneEncodedAsMP3DecodesBackAndEveryFrameStandsAlone() throws {
        let (stream, bytes) = try flac.encodedTone(.mp3)
        #expect(stream.mimeType == "audio/mpeg")
        #expect(LiveAudioEncoding.mp3.dlnaProfile(sampleRate: 44_100, channels: 2) == "MP3")
        // Nothing but MPEG-1 Layer III frames at 320 kbit/s, 44.1 kHz, back to back.
        let headers = frameHeaders(bytes)
        #expect(headers.count > 100, "\(headers.count) frames")
        #expect(headers.allSatisfy { $0.kbps == 320 && $0.rate == 44_100 })
        let last = try #require(headers.last)
        #expect(last.offset + 144 * 320_000 / 44_100 + 1 >= bytes.count, "the frames cover the stream (\(bytes.count) bytes)")
        // No bit reservoir: every frame's main_data_begin (the first 9 bits after the 4-byte
        // header, no CRC) is 0, so a device may start at any frame.
        #expect(headers.allSatisfy { bytes[$0.offset + 4] == 0 && bytes[$0.offset + 5] & 0x80 == 0 })
        let decoded = try decode(bytes)
        #expect(decoded.count > 2 * 44_100 * 4, "\(decoded.count) bytes decoded")
        #expect(correlationWithTone(leftChannel(decoded)) >= 0.99)
        #expect(stream.bitrate > 300_000 && stream.bitrate <= 330_000, "\(stream.bitrate) bit/s")
    }

    /// A device that connects later starts at an MP3 frame and decodes from there.
    @Test func aReaderJoiningMidStreamStartsAtAFrame() throws {
        let bytes = try flac.encodedTone(.mp3, joiningAt: .seconds(11)).bytes
        #expect(bytes.count > 2 && bytes[0] == 0xFF && bytes[1] & 0xFE == 0xFA, "starts with a frame header")
        let decoded = try decode(bytes)
        let frames = decoded.count / 4
        #expect(frames > 44_100 && frames < 2 * 44_100 + 4_608, "\(frames) frames")
        #expect(correlationWithTone(leftChannel(decoded)) >= 0.99)
    }

    @Test func aRendererListingOnlyMPEGGetsMP3() {
        #expect(LiveAudioEncoding.choose(from: ["audio/mpeg"], sampleRate: 44_100, channels: 2) == .mp3)
        #expect(LiveAudioEncoding.choose(from: ["audio/mpeg", "audio/flac"], sampleRate: 44_100, channels: 2) == .flac)
        #expect(LiveAudioEncoding.choose(from: ["audio/mp4"], sampleRate: 44_100, channels: 2) == nil)
    }
}

/// AAC live streams (ADTS) on bytes: FFmpeg's native encoder, decoded by FFmpeg from Debian.
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg")))
struct AACLiveStreamTests {
    let flac = FLACLiveStreamTests()

    func decode(_ adts: [UInt8]) throws -> [UInt8] {
        try runTool("/usr/bin/ffmpeg", ["-v", "error", "-f", "aac", "-i", "pipe:0", "-f", "s16le", "-ac", "2", "-ar", "44100", "pipe:1"], input: adts)
    }

    /// The ADTS frames in `bytes`, back to back: (offset, length, frequency index, channels).
    func frames(_ bytes: [UInt8]) -> [(offset: Int, length: Int, frequency: Int, channels: Int)] {
        var found: [(Int, Int, Int, Int)] = []
        var offset = 0
        while offset + 7 <= bytes.count, bytes[offset] == 0xFF, bytes[offset + 1] == 0xF1 {
            let length = Int(bytes[offset + 3] & 3) << 11 | Int(bytes[offset + 4]) << 3 | Int(bytes[offset + 5] >> 5)
            guard length > 7 else { break }
            found.append((offset, length, Int(bytes[offset + 2] >> 2 & 0xF), Int(bytes[offset + 2] & 1) << 2 | Int(bytes[offset + 3] >> 6)))
            offset += length
        }
        return found
    }

    @Test func aToneEncodedAsAACInADTSDecodesBack() throws {
        let (stream, bytes) = try flac.encodedTone(.aac)
        #expect(stream.mimeType == "audio/aac")
        #expect(LiveAudioEncoding.aac.dlnaProfile(sampleRate: 44_100, channels: 2) == "AAC_ADTS_320")
        let found = frames(bytes)
        // Every byte is in an ADTS frame of 44.1 kHz (index 4) stereo AAC-LC (profile bits 01).
        #expect(found.count > 100, "\(found.count) frames")
        #expect(found.allSatisfy { $0.frequency == 4 && $0.channels == 2 && bytes[$0.offset + 2] >> 6 == 1 })
        #expect(found.last.map { $0.offset + $0.length } == bytes.count)
        let decoded = try decode(bytes)
        #expect(decoded.count > 2 * 44_100 * 4, "\(decoded.count) bytes decoded")
        #expect(correlationWithTone(leftChannel(decoded)) >= 0.99)
        #expect(stream.bitrate > 100_000 && stream.bitrate <= 300_000, "\(stream.bitrate) bit/s")
    }

    @Test func aReaderJoiningMidStreamStartsAtAnADTSFrame() throws {
        let bytes = try flac.encodedTone(.aac, joiningAt: .seconds(11)).bytes
        #expect(bytes.count > 2 && bytes[0] == 0xFF && bytes[1] == 0xF1, "starts with an ADTS header")
        let decoded = try decode(bytes)
        #expect(decoded.count / 4 > 44_100, "\(decoded.count / 4) frames")
        #expect(correlationWithTone(leftChannel(decoded)) >= 0.99)
    }

    @Test func aRendererListingDLNAsADTSGetsAACAfterMP3() {
        #expect(LiveAudioEncoding.choose(from: ["audio/vnd.dlna.adts"], sampleRate: 48_000, channels: 2) == .aac)
        #expect(LiveAudioEncoding.choose(from: ["audio/aac", "audio/mpeg"], sampleRate: 48_000, channels: 2) == .mp3)
    }
}
