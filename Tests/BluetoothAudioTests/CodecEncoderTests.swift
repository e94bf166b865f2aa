import BluetoothAudio
import CSbc
import Foundation
import Testing

/// A 1 kHz tone, interleaved stereo S16LE: `seconds` at `rate`, left and right equal.
func tone(seconds: Double, rate: Int = 44_100, amplitude: Double = 12_000) -> [UInt8] {
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

/// The left channel of interleaved stereo samples of `width` bytes (little-endian), scaled to 16 bits.
func leftChannel(_ bytes: [UInt8], width: Int) -> [Double] {
    stride(from: 0, to: bytes.count - 2 * width + 1, by: 2 * width).map { index in
        var value: Int32 = 0
        for byte in 0..<width { value |= Int32(bytes[index + byte]) << (8 * byte) }
        value = (value << (32 - 8 * width)) >> (32 - 8 * width)  // sign-extend
        return Double(value) / Double(1 << (8 * width - 16))
    }
}

/// The normalised cross-correlation of `decoded` against `source` at the best lag up to `maximumLag`
/// frames (codecs delay their output), over the middle of the signal (start-up and end left out).
func correlation(_ source: [Double], _ decoded: [Double], maximumLag: Int = 4_096) -> (value: Double, lag: Int) {
    func at(_ lag: Int, from: Int, count: Int) -> Double {
        var dot = 0.0, aa = 0.0, bb = 0.0
        for index in from..<(from + count) where index + lag < decoded.count && index < source.count {
            dot += source[index] * decoded[index + lag]
            aa += source[index] * source[index]
            bb += decoded[index + lag] * decoded[index + lag]
        }
        return aa > 0 && bb > 0 ? dot / (aa * bb).squareRoot() : 0
    }
    var best = (value: -1.0, lag: 0)
    for lag in 0...maximumLag {
        let value = at(lag, from: 5_000, count: 2_000)
        if value > best.value { best = (value, lag) }
    }
    let count = min(source.count, decoded.count - best.lag) - 10_000
    return (at(best.lag, from: 5_000, count: max(0, count)), best.lag)
}

/// 50 ms windows (the first and last left out) whose own 1 kHz sine fit correlates ≥ 0.99:
/// a skipped or repeated piece of audio breaks the window it falls in, which one correlation
/// over the whole signal would hide.
func matchingWindows(_ samples: [Double], rate: Int = 44_100) -> (matching: Int, total: Int) {
    let window = rate / 20
    let w = 2 * Double.pi * 1_000 / Double(rate)
    var matching = 0, total = 0
    var start = window
    while start + 2 * window <= samples.count {
        let x = samples[start..<(start + window)]
        let mean = x.reduce(0, +) / Double(window)
        var a = 0.0, b = 0.0
        for (index, value) in x.enumerated() {
            a += (value - mean) * sin(w * Double(index))
            b += (value - mean) * cos(w * Double(index))
        }
        a *= 2 / Double(window)
        b *= 2 / Double(window)
        var dot = 0.0, xx = 0.0, ff = 0.0
        for (index, value) in x.enumerated() {
            let fit = a * sin(w * Double(index)) + b * cos(w * Double(index))
            dot += (value - mean) * fit
            xx += (value - mean) * (value - mean)
            ff += fit * fit
        }
        total += 1
        if xx > 0, ff > 0, dot / (xx * ff).squareRoot() >= 0.99 { matching += 1 }
        start += window
    }
    return (matching, total)
}

/// Runs a Debian tool with `input` on stdin; its stdout.
func run(_ tool: String, _ arguments: [String], input: [UInt8]) throws -> [UInt8] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: tool)
    process.arguments = arguments
    let stdin = Pipe(), stdout = Pipe()
    process.standardInput = stdin
    process.standardOutput = stdout
    process.standardError = FileHandle.nullDevice
    try process.run()
    let writer = Thread {
        stdin.fileHandleForWriting.write(Data(input))
        try? stdin.fileHandleForWriting.close()
    }
    writer.start()
    let output = stdout.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return [UInt8](output)
}

/// LATM `AudioMuxElement`s from A2DP AAC packets (the RTP header off; fragments joined up to the
/// marker bit), each wrapped in LOAS's sync layer (`0x2B7`, 13-bit length) so FFmpeg's `loas`
/// demuxer reads them: an independent parser of the framing.
func loasStream(_ packets: [[UInt8]]) -> [UInt8] {
    var stream: [UInt8] = []
    var element: [UInt8] = []
    for packet in packets where packet.count > 12 {
        element += packet[12...]
        guard packet[1] & 0x80 != 0 else { continue }
        stream += [0x56, 0xE0 | UInt8(element.count >> 8), UInt8(element.count & 0xFF)] + element
        element = []
    }
    return stream
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
        let source = tone(seconds: 2)
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
        let pcm = try run(Self.ffmpeg, ["-v", "error", "-f", "loas", "-i", "pipe:0", "-f", "s16le", "-ac", "2", "-ar", "44100", "pipe:1"], input: loasStream(packets))
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
        let low = try encoder.packets(from: tone(seconds: 1)).reduce(0) { $0 + $1.count }
        while encoder.stepBitrate(down: false) {}
        #expect(encoder.bitrate == top)
        let high = try encoder.packets(from: tone(seconds: 1)).reduce(0) { $0 + $1.count }
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
        let source = tone(seconds: 1)
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
        let pcm = try run(Self.freeaptxdec, arguments, input: payloads.flatMap { $0 })
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
        let packets = try encoder.packets(from: tone(seconds: seconds))
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
