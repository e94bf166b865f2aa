import Foundation
public import Testing

/// A Debian tool's stdout for `input` on its stdin (the decoders the codec tests check our
/// encoders with: `ffmpeg`, `freeaptxdec`); its stderr is dropped.
public func runTool(_ tool: String, _ arguments: [String], input: [UInt8]) throws -> [UInt8] {
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

/// The LATM `AudioMuxElement`s of A2DP AAC packets (the 12-byte RTP header off; fragments joined
/// up to the marker bit), each in LOAS's sync layer (`0x2B7`, 13-bit length) so that FFmpeg's
/// `loas` demuxer reads them: an independent parser of the framing.
public func loasStream(_ packets: [[UInt8]]) -> [UInt8] {
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

/// The left channel of interleaved stereo samples of `width` bytes (little-endian), scaled to 16 bits.
public func leftChannel(_ bytes: [UInt8], width: Int) -> [Double] {
    stride(from: 0, to: bytes.count - 2 * width + 1, by: 2 * width).map { index in
        var value: Int32 = 0
        for byte in 0..<width { value |= Int32(bytes[index + byte]) << (8 * byte) }
        value = (value << (32 - 8 * width)) >> (32 - 8 * width)  // sign-extend
        return Double(value) / Double(1 << (8 * width - 16))
    }
}

/// The normalised cross-correlation of `decoded` against `source` at the best lag up to `maximumLag`
/// frames (codecs delay their output), over the middle of the signal (start-up and end left out).
public func correlation(_ source: [Double], _ decoded: [Double], maximumLag: Int = 4_096) -> (value: Double, lag: Int) {
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

/// 50 ms windows (the first and last left out) whose own sine fit at `frequency` (1 kHz by
/// default) correlates ≥ 0.99: a skipped or repeated piece of audio breaks the window it falls
/// in, which one correlation over the whole signal would hide.
public func matchingWindows(_ samples: [Double], rate: Int = 44_100, frequency: Double = 1_000) -> (matching: Int, total: Int) {
    let window = rate / 20
    let w = 2 * Double.pi * frequency / Double(rate)
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

/// The tone (``tone(seconds:)``, stereo S16LE) came out whole: every 50 ms window fits a 440 Hz
/// sine (correlation ≥ 0.99), but for two windows around each underrun delivery itself reported
/// (its writer starved on a loaded box: silence went in before the samples reached the route).
/// `pcm` (interleaved stereo S16LE) without the quiet after its last sample above the floor
/// (50): a receiver that goes on writing silence after a stream (shairport-sync) would
/// otherwise add windows that hold no tone.
public func trimmingTrailingSilence(_ pcm: [UInt8]) -> [UInt8] {
    let left = leftChannel(pcm)
    guard let last = left.lastIndex(where: { abs($0) > 50 }) else { return [] }
    return Array(pcm.prefix((last + 1) * 4))
}

public func expectToneIntact(_ pcm: [UInt8], underruns: Int, _ context: String, sourceLocation: SourceLocation = #_sourceLocation) {
    let loud = Array(leftChannel(pcm).drop { abs($0) < 50 })
    let windows = matchingWindows(loud, frequency: 440)
    #expect(windows.total >= 20 && windows.matching >= windows.total - 2 * underruns,
            "\(windows.matching) of \(windows.total) windows match the tone, \(underruns) underruns in delivery; \(context)", sourceLocation: sourceLocation)
}

/// The path of a Debian tool a test checks with; a failure saying how to install it when it is
/// absent (CI installs every one: scripts/install-deps.sh).
public func requireTool(_ path: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
    guard FileManager.default.isExecutableFile(atPath: path) else {
        Issue.record("\(path) is missing (scripts/install-deps.sh installs it)", sourceLocation: sourceLocation)
        throw CancellationError()
    }
    return path
}
