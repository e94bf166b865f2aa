/// MPEG-4 LATM (ISO/IEC 14496-3 §1.7.3) as A2DP's AAC carries it: an `AudioMuxElement` with
/// muxConfigPresent = 1 and its `StreamMuxConfig` in every element.
public enum LATM {
    /// One `AudioMuxElement(1)` around one AAC-LC access unit: useSameStreamMux = 0, the
    /// `StreamMuxConfig` (version 0, one program, one layer, the `AudioSpecificConfig`,
    /// frameLengthType 0, buffer fullness 0xFF, no other data, no CRC), `PayloadLengthInfo`
    /// (bytes of 255, then the rest), the payload, then zero bits to the byte.
    public static func audioMuxElement(accessUnit: ArraySlice<UInt8>, configuration: AACCapabilities) -> [UInt8] {
        var writer = BitWriter(capacity: accessUnit.count + 16)
        writer.write(0, bits: 1)  // useSameStreamMux
        writer.write(0, bits: 1)  // audioMuxVersion
        writer.write(1, bits: 1)  // allStreamsSameTimeFraming
        writer.write(0, bits: 6)  // numSubFrames
        writer.write(0, bits: 4)  // numProgram
        writer.write(0, bits: 3)  // numLayer
        for (value, bits) in audioSpecificConfig(configuration) { writer.write(value, bits: bits) }
        writer.write(0, bits: 3)  // frameLengthType
        writer.write(0xFF, bits: 8)  // latmBufferFullness
        writer.write(0, bits: 1)  // otherDataPresent
        writer.write(0, bits: 1)  // crcCheckPresent
        var remaining = accessUnit.count
        while remaining >= 255 {
            writer.write(255, bits: 8)
            remaining -= 255
        }
        writer.write(UInt32(remaining), bits: 8)
        for byte in accessUnit { writer.write(UInt32(byte), bits: 8) }
        return writer.finish()
    }

    /// The `AudioSpecificConfig` of AAC-LC (object type 2) at the configuration's rate and
    /// channels, with a plain `GASpecificConfig` (1024 frames, no core coder, no extension).
    static func audioSpecificConfig(_ configuration: AACCapabilities) -> [(UInt32, Int)] {
        let rates = [96_000, 88_200, 64_000, 48_000, 44_100, 32_000, 24_000, 22_050, 16_000, 12_000, 11_025, 8_000]
        let index = rates.firstIndex(of: configuration.sampleRate ?? 44_100) ?? 4
        return [(2, 5), (UInt32(index), 4), (UInt32(configuration.channelCount ?? 2), 4), (0, 1), (0, 1), (0, 1)]
    }
}

/// Bits written most significant first.
struct BitWriter {
    private var bytes: [UInt8] = []
    private var current: UInt32 = 0
    private var used = 0

    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    mutating func write(_ value: UInt32, bits: Int) {
        for shift in stride(from: bits - 1, through: 0, by: -1) {
            current = current << 1 | (value >> UInt32(shift)) & 1
            used += 1
            if used == 8 {
                bytes.append(UInt8(truncatingIfNeeded: current))
                current = 0
                used = 0
            }
        }
    }

    mutating func finish() -> [UInt8] {
        if used > 0 { bytes.append(UInt8(truncatingIfNeeded: current << UInt32(8 - used))) }
        used = 0
        current = 0
        return bytes
    }
}
