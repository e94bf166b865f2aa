import RoutingModel
import Testing

/// What Bluetooth and AirPlay encoders are given: interleaved stereo S16LE from any PCM buffer.
@Suite struct SampleBufferStereoS16Tests {
    func buffer(_ encoding: SampleBuffer.Format.Encoding, channels: Int, _ data: [UInt8]) -> SampleBuffer {
        SampleBuffer(format: .init(encoding: encoding, sampleRate: 44_100, channels: channels), presentationTime: .zero, frameCount: 0, data: data)
    }

    @Test func stereoS16IsTakenAsItIsWithoutAPartialFrame() {
        #expect(buffer(.pcmS16LE, channels: 2, [1, 2, 3, 4, 5, 6, 7, 8]).stereoS16LE == [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(buffer(.pcmS16LE, channels: 2, [1, 2, 3, 4, 5, 6]).stereoS16LE == [1, 2, 3, 4], "a write may end inside a frame")
    }

    @Test func monoIsDoubled() {
        #expect(buffer(.pcmS16LE, channels: 1, [0x34, 0x12, 0xFF, 0x7F, 9]).stereoS16LE == [0x34, 0x12, 0x34, 0x12, 0xFF, 0x7F, 0xFF, 0x7F])
    }

    @Test func floatIsScaledAndClipped() {
        func bytes(_ values: [Float]) -> [UInt8] { values.flatMap { value in withUnsafeBytes(of: value.bitPattern.littleEndian, Array.init) } }
        func samples(_ bytes: [UInt8]) -> [Int16] { stride(from: 0, to: bytes.count, by: 2).map { Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8) } }
        #expect(samples(buffer(.pcmF32LE, channels: 2, bytes([0.5, -1, 2, -3])).stereoS16LE) == [16_383, -32_767, 32_767, -32_767])
        #expect(samples(buffer(.pcmF32LE, channels: 1, bytes([0.25, 0])).stereoS16LE) == [8_191, 8_191, 0, 0])
    }

    @Test func encodedFramesAndMoreThanTwoChannelsGiveNothing() {
        #expect(buffer(.encoded, channels: 2, [1, 2, 3, 4]).stereoS16LE.isEmpty)
        #expect(buffer(.pcmS16LE, channels: 6, [UInt8](repeating: 1, count: 24)).stereoS16LE.isEmpty)
        #expect(buffer(.pcmF32LE, channels: 6, [UInt8](repeating: 0, count: 48)).stereoS16LE.isEmpty)
    }
}
