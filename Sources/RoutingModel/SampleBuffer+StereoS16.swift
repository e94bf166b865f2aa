extension SampleBuffer {
    /// The samples as interleaved stereo S16LE, what Bluetooth and AirPlay encoders take: mono
    /// doubled, float converted (clipped to ±1), S16 stereo (what the daemon's writers send) as it
    /// is; empty for encoded frames or more than two channels.
    public var stereoS16LE: [UInt8] {
        let buffer = self
        switch buffer.format.encoding {
        case .pcmS16LE where buffer.format.channels == 2:
            return buffer.data.count & 3 == 0 ? buffer.data : Array(buffer.data.prefix(buffer.data.count & ~3))
        case .pcmS16LE:
            guard buffer.format.channels == 1 else { return [] }
            let samples = buffer.data.count / 2
            var bytes = [UInt8](repeating: 0, count: samples * 4)
            bytes.withUnsafeMutableBufferPointer { out in
                buffer.data.withUnsafeBufferPointer { input in
                    for index in 0..<samples {
                        let (low, high) = (input[2 * index], input[2 * index + 1])
                        out[4 * index] = low
                        out[4 * index + 1] = high
                        out[4 * index + 2] = low
                        out[4 * index + 3] = high
                    }
                }
            }
            return bytes
        case .pcmF32LE:
            let channels = buffer.format.channels
            guard channels == 1 || channels == 2 else { return [] }
            let samples = buffer.data.count / 4
            let frames = samples / channels
            var bytes = [UInt8](repeating: 0, count: frames * 4)
            bytes.withUnsafeMutableBufferPointer { out in
                buffer.data.withUnsafeBufferPointer { input in
                    func sample(_ index: Int) -> Int16 {
                        let bits = UInt32(input[4 * index]) | UInt32(input[4 * index + 1]) << 8 | UInt32(input[4 * index + 2]) << 16 | UInt32(input[4 * index + 3]) << 24
                        return Int16(max(-1, min(1, Float(bitPattern: bits))) * 32767)
                    }
                    for frame in 0..<frames {
                        let left = sample(frame * channels)
                        let right = channels == 2 ? sample(frame * channels + 1) : left
                        out[4 * frame] = UInt8(truncatingIfNeeded: left)
                        out[4 * frame + 1] = UInt8(truncatingIfNeeded: left >> 8)
                        out[4 * frame + 2] = UInt8(truncatingIfNeeded: right)
                        out[4 * frame + 3] = UInt8(truncatingIfNeeded: right >> 8)
                    }
                }
            }
            return bytes
        case .encoded:
            return []
        }
    }
}
