import BluetoothAudio
import CSbc
import Foundation
import MediaRouteTestSupport
import Testing

/// A 1 kHz tone, interleaved stereo S16LE: `seconds` at `rate`, left and right equal.
func kilohertzTone(seconds: Double, rate: Int = 44_100, amplitude: Double = 12_000) -> [UInt8] {
    var bytes: [UInt8] = []
    let frames = Int(Double(rate) * seconds)
    bytes.reserveCapacity(frames * 4)
    for frame in 0..<frames {
        let value = UInt16(bitPattern: Int16(sin(Double(frame) * 2 * .pi * 1_000 / Double(rate)) * amplitude))
        for _ in 0..<2 {
            bytes.append(UInt8(truncatingIfNeeded: value))
            bytes.append(UInt8(truncatingIfNeeded: value >> 8))
        }
    }
    return bytes
}






@Suite(.serialized) struct CodecEncoderTests {
    static let ffmpeg = "/usr/bin/ffmpeg"
    static let freeaptxdec = "/usr/bin/freeaptxdec"

    @Test func aacDecodesBackWithFFmpeg() throws {
        guard A2DPCodec.aac.unavailability() == nil, FileManager.default.isExecutableFile(atPath: Self.ffmpeg) else {
            Issue.record("AAC needs libavcodec59 and ffmpeg (scripts/install-deps.sh installs both)")
            return
        }
        let configuration = try A2DPCodec.aac.configuration(from: AACCapabilities.source.bytes)
        let encoder = try AACEncoder(a2dpConfiguration: configuration, mtu: 895)
        #expect(encoder.bitrate <= 320_000 && encoder.bitrate >= 192_000, "\(encoder.bitrate)")
        let source = kilohertzTone(seconds: 2)
        var packets: [[UInt8]] = []
        for chunk in stride(from: 0, to: source.count, by: 4_410) {
            packets += try encoder.packets(from: Array(source[chunk..<min(source.count, chunk + 4_410)]))
        }
        packets += encoder.flush()
        #expect(packets.allSatisfy { $0.count <= 895 })
        #expect(packets.allSatisfy { $0[0] == 0x80 && $0[1] & 0x7F == 96 })
        // RTP timestamps advance by 1024 samples per access unit.
        let marked = packets.filter { $0[1] & 0x80 != 0 }
        let stamps = marked.map { UInt32($0[4]) << 24 | UInt32($0[5]) << 16 | UInt32($0[6]) << 8 | UInt32($0[7]) }
        #expect(zip(stamps, stamps.dropFirst()).allSatisfy { $1 &- $0 == 1024 })
        let pcm = try runTool(Self.ffmpeg, ["-v", "error", "-f", "loas", "-i", "pipe:0", "-f", "s16le", "-ac", "2", "-ar", "44100", "pipe:1"], input: loasStream(packets))
        let decoded = leftChannel(pcm, width: 2)
        #expect(decoded.count > 80_000, "ffmpeg decoded \(decoded.count) frames")
        let result = correlation(leftChannel(source, width: 2), decoded)
        #expect(result.value >= 0.99, "correlation \(result.value) at lag \(result.lag)")
        let windows = matchingWindows(decoded)
        #expect(windows.total >= 35 && windows.matching == windows.total, "\(windows.matching) of \(windows.total) 50 ms windows match")
    }

    @Test func aacStepsItsBitRateDownAndBackUp() throws {
        guard A2DPCodec.aac.unavailability() == nil else {
            Issue.record("AAC needs libavcodec59")
            return
        }
        let configuration = try A2DPCodec.aac.configuration(from: AACCapabilities.source.bytes)
        let encoder = try AACEncoder(a2dpConfiguration: configuration, mtu: 1_021)
        let top = encoder.bitrate
        #expect(encoder.stepBitrate(down: true))
        #expect(encoder.bitrate < top)
        while encoder.stepBitrate(down: true) {}
        #expect(encoder.bitrate == AACEncoder.minimumBitrate)
        // Smaller access units at the lower rate.
        let low = try encoder.packets(from: kilohertzTone(seconds: 1)).reduce(0) { $0 + $1.count }
        while encoder.stepBitrate(down: false) {}
        #expect(encoder.bitrate == top)
        let high = try encoder.packets(from: kilohertzTone(seconds: 1)).reduce(0) { $0 + $1.count }
        #expect(high > low, "\(high) bytes at \(top) bit/s, \(low) at 64 kbit/s")
    }

    @Test(arguments: [false, true]) func aptXDecodesBackWithFreeaptxdec(highDefinition: Bool) throws {
        let codec: A2DPCodec = highDefinition ? .aptxHD : .aptx
        guard codec.unavailability() == nil, FileManager.default.isExecutableFile(atPath: Self.freeaptxdec) else {
            Issue.record("aptX needs libfreeaptx0 and freeaptx-utils (scripts/install-deps.sh installs both)")
            return
        }
        let configuration = try codec.configuration(from: codec.sourceCapabilities)
        #expect(configuration.last == (highDefinition ? 0 : 0x22), "44.1 kHz stereo")
        let encoder = try AptXEncoder(a2dpConfiguration: configuration, highDefinition: highDefinition, mtu: 895)
        let source = kilohertzTone(seconds: 1)
        var packets = try encoder.packets(from: source)
        packets += encoder.flush()
        #expect(packets.dropLast().allSatisfy { $0.count <= 895 && $0.count >= 880 })
        // aptX goes bare; aptX HD after an RTP header.
        let payloads = packets.map { highDefinition ? Array($0.dropFirst(12)) : $0 }
        if highDefinition { #expect(packets.allSatisfy { $0[0] == 0x80 && $0[1] == 96 }) }
        let bytes = payloads.reduce(0) { $0 + $1.count }
        #expect(bytes == 44_100 / 4 * (highDefinition ? 6 : 4), "4 frames per \(highDefinition ? 6 : 4)-byte codeword")
        var arguments: [String] = []
        if highDefinition { arguments.append("--hd") }
        let pcm = try runTool(Self.freeaptxdec, arguments, input: payloads.flatMap { $0 })
        let decoded = leftChannel(pcm, width: 3)
        let result = correlation(leftChannel(source, width: 2), decoded)
        #expect(result.value >= 0.99, "correlation \(result.value) at lag \(result.lag)")
        let windows = matchingWindows(decoded)
        #expect(windows.total >= 15 && windows.matching == windows.total, "\(windows.matching) of \(windows.total) 50 ms windows match")
        #expect(encoder.bitrate == (highDefinition ? 529_200 : 352_800))
    }

    /// Debian has no LDAC decoder: the frames are checked by their headers (sync word 0xAA, a
    /// 3-bit sampling rate index, a 2-bit channel configuration, the 9-bit length of the frame
    /// after its header less one) and the bit rate by their size.
    @Test func ldacFramesCarryTheirHeadersAndBitRate() throws {
        guard A2DPCodec.ldac.unavailability() == nil else {
            Issue.record("LDAC needs libldacbt-enc2 (scripts/install-deps.sh installs it)")
            return
        }
        let configuration = try A2DPCodec.ldac.configuration(from: LDACCapabilities.source.bytes)
        #expect(configuration == A2DPVendorCodecID.ldac.bytes + [0x20, 0x01], "44.1 kHz stereo")
        let encoder = try LDACEncoder(a2dpConfiguration: configuration, mtu: 679)
        let seconds = 2.0
        let packets = try encoder.packets(from: kilohertzTone(seconds: seconds))
        #expect(!packets.isEmpty)
        var frames = 0
        var payload = 0
        for packet in packets {
            #expect(packet.count <= 679 && packet[0] == 0x80 && packet[1] == 96)
            let count = Int(packet[12] & 0x0F)
            var offset = 13
            for _ in 0..<count {
                guard offset + 3 <= packet.count else { Issue.record("frame header past the packet"); break }
                #expect(packet[offset] == 0xAA, "LDAC sync word")
                #expect(packet[offset + 1] >> 5 == 0, "sampling rate index 0: 44.1 kHz")
                #expect((packet[offset + 1] >> 3) & 0x3 == 2, "channel configuration 2: stereo")
                // The 3-byte header, then the frame's length less one (its 9-bit field).
                let length = 3 + (Int(packet[offset + 1] & 0x07) << 6 | Int(packet[offset + 2] >> 2)) + 1
                offset += length
                frames += 1
            }
            #expect(offset == packet.count, "frames fill the packet exactly")
            payload += packet.count - 13
        }
        // 128 frames of PCM per LDAC frame at 44.1 kHz (a few stay in the encoder).
        #expect(frames <= Int(44_100 * seconds) / 128 && frames >= Int(44_100 * seconds) / 128 - 8, "\(frames) frames")
        let measured = Double(payload * 8) / (Double(frames * 128) / 44_100)
        let stated = Double(encoder.bitrate)
        #expect(abs(measured - stated) / stated < 0.05, "\(measured) bit/s measured, \(stated) stated")
    }
}
