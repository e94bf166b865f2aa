import Foundation
import LiveStreaming
import MediaRouteTestSupport
import RoutingModel
import Testing

/// FLAC live streams on bytes: FFmpeg's encoder (opened at run time), checked with FFmpeg's
/// decoder from Debian, for a reader from the start and one that joins mid-stream.
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg")))
struct FLACLiveStreamTests {
    /// `seconds` of the test tone as delivery hands it: 100 ms buffers dated from 10 s.
    func feed(_ stream: LiveAudioStream, seconds: Double) {
        let samples = tone(seconds: seconds)
        let bytesPerBuffer = 4_410 * 4
        var offset = 0
        var time = Duration.seconds(10)
        while offset < samples.count {
            let piece = Array(samples[offset..<min(offset + bytesPerBuffer, samples.count)])
            stream.append(SampleBuffer(format: .cdAudio, presentationTime: time, frameCount: piece.count / 4, data: piece))
            offset += piece.count
            time += .milliseconds(100)
        }
    }

    func readAll(_ reader: LiveByteStream.Reader) -> [UInt8] {
        var all: [UInt8] = []
        while case .bytes(let bytes) = reader.read(maximum: 1 << 20) { all += bytes }
        return all
    }

    /// A 44.1 kHz stereo stream in `encoding` (its encoder required), with a reader from 10 s
    /// on or, with `joiningAt`, one that connects after 2 s of it; everything that reader got
    /// once 3 s of the tone went in.
    func encodedTone(_ encoding: LiveAudioEncoding, joiningAt joining: Duration? = nil) throws -> (stream: LiveAudioStream, bytes: [UInt8]) {
        let stream = LiveAudioStream(encoding: encoding, sampleRate: 44_100, channels: 2, configuration: .init(prime: .zero), now: { .seconds(10) })
        try #require(stream.encoderFailure == nil, "libavcodec's \(encoding.codecName) encoder: \(stream.encoderFailure.map { "\($0)" } ?? "")")
        let reader: LiveByteStream.Reader
        if let joining {
            feed(stream, seconds: 2)
            reader = stream.bytes.makeReader(playingFrom: joining)
            feed(stream, seconds: 1)
        } else {
            reader = stream.bytes.makeReader(playingFrom: .seconds(10))
            feed(stream, seconds: 3)
        }
        stream.finish()
        return (stream, readAll(reader))
    }

    /// Decoded back to 16-bit stereo by `ffmpeg -f flac`.
    func decode(_ flac: [UInt8]) throws -> [UInt8] {
        try runTool("/usr/bin/ffmpeg", ["-v", "error", "-f", "flac", "-i", "pipe:0", "-f", "s16le", "-ac", "2", "-ar", "44100", "pipe:1"], input: flac)
    }

    @Test func aToneEncodedAsFLACDecodesBackIntact() throws {
        let (stream, bytes) = try encodedTone(.flac)
        #expect(stream.mimeType == "audio/flac")
        // fLaC, then the STREAMINFO block (last, 34 bytes): 1 152-frame blocks, 44.1 kHz, 2 channels, 16 bits.
        #expect(Array(bytes.prefix(8)) == Array("fLaC".utf8) + [0x80, 0, 0, 34])
        #expect(bytes[8] == 0x04 && bytes[9] == 0x80 && bytes[10] == 0x04 && bytes[11] == 0x80, "min and max block size 1 152")
        let decoded = try decode(bytes)
        // Whole blocks only: what did not fill the last block waits (3 s = 114 blocks and a part).
        #expect(decoded.count == 114 * 1_152 * 4, "\(decoded.count) bytes")
        #expect(correlationWithTone(leftChannel(decoded)) >= 0.99)
        // Lossless, and smaller than the samples: a tone compresses.
        #expect(decoded == Array(tone(seconds: 3).prefix(decoded.count)))
        #expect(stream.bitrate < 44_100 * 4 * 8 / 2, "\(stream.bitrate) bit/s")
    }

    /// A device that connects later starts at the FLAC frame due then (frames are dated by
    /// their first sample), after the header: the decoder reads it as a stream of its own.
    @Test func aReaderJoiningMidStreamGetsTheHeaderThenWholeFrames() throws {
        let bytes = try encodedTone(.flac, joiningAt: .seconds(11)).bytes
        #expect(Array(bytes.prefix(4)) == Array("fLaC".utf8))
        // The frame after the header starts with FLAC's sync code.
        #expect(bytes[42] == 0xFF && bytes[43] & 0xFE == 0xF8, "\(bytes[42..<44])")
        let decoded = try decode(bytes)
        // From the block dated at or before 11 s (block 38 starts at 38 × 1 152 frames ≈ 0.993 s).
        let frames = decoded.count / 4
        #expect(frames > 44_100 && frames < 2 * 44_100, "\(frames) frames")
        #expect(correlationWithTone(leftChannel(decoded)) >= 0.99)
        let source = tone(seconds: 3)
        let start = 38 * 1_152 * 4
        #expect(Array(decoded.prefix(4_000)) == Array(source[start..<start + 4_000]), "the samples of block 38 on")
    }
}
