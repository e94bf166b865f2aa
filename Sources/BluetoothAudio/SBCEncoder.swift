import CSbc
import Synchronization

/// SBC through libsbc, in A2DP media packets: a 12-byte RTP header (payload type
/// 96, sequence number, timestamp in samples), a 1-byte SBC payload header with
/// the frame count, then as many whole frames as fit the MTU.
public final class SBCEncoder: BluetoothAudioEncoder {
    private struct State {
        var sbc = sbc_t()
        var pending: [UInt8] = []
        var frames: [[UInt8]] = []
        var sequence: UInt16 = 0
        var timestamp: UInt32 = 0
    }

    public let pcmBytesPerFrame: Int
    public let encodedFrameLength: Int
    public let mtu: Int
    /// Samples per channel in one frame (blocks × subbands).
    public let samplesPerFrame: Int
    private let state: Mutex<State>

    /// The sampling frequency an A2DP SBC configuration chose (its first byte's high bits); nil when it chose none.
    public static func sampleRate(a2dpConfiguration: [UInt8]) -> Int? {
        guard let first = a2dpConfiguration.first else { return nil }
        switch first & 0xF0 {
        case 0x80: return 16_000
        case 0x40: return 32_000
        case 0x20: return 44_100
        case 0x10: return 48_000
        default: return nil
        }
    }

    /// - Parameter a2dpConfiguration: the transport's `Configuration` (4 bytes of A2DP SBC capabilities).
    public init(a2dpConfiguration: [UInt8], mtu: Int) throws(BluetoothAudioError) {
        guard a2dpConfiguration.count == 4 else { throw BluetoothAudioError("SBC configuration has \(a2dpConfiguration.count) bytes, not 4") }
        var sbc = sbc_t()
        let result = a2dpConfiguration.withUnsafeBytes { sbc_init_a2dp(&sbc, MR_SBC_LE, $0.baseAddress, $0.count) }
        guard result == 0 else { throw BluetoothAudioError("libsbc refused the SBC configuration \(a2dpConfiguration) (error \(result))") }
        let codesize = sbc_get_codesize(&sbc)
        let frameLength = sbc_get_frame_length(&sbc)
        guard codesize > 0, frameLength > 0, 13 + frameLength <= mtu else {
            sbc_finish(&sbc)
            throw BluetoothAudioError("an SBC frame of \(frameLength) bytes does not fit an MTU of \(mtu)")
        }
        pcmBytesPerFrame = codesize
        encodedFrameLength = frameLength
        samplesPerFrame = codesize / 4  // stereo S16: 4 bytes per sample pair; mono streams are upmixed by the caller
        self.mtu = mtu
        state = Mutex(State(sbc: sbc))
    }

    deinit {
        state.withLock { sbc_finish(&$0.sbc) }
    }

    public func packets(from pcm: [UInt8]) throws(BluetoothAudioError) -> [[UInt8]] {
        try state.withLock { (state: inout State) throws(BluetoothAudioError) -> [[UInt8]] in
            state.pending += pcm
            var offset = 0
            var output = [UInt8](repeating: 0, count: encodedFrameLength + 16)
            while state.pending.count - offset >= pcmBytesPerFrame {
                var written = 0
                let consumed = state.pending.withUnsafeBytes { input in
                    output.withUnsafeMutableBytes { out in
                        sbc_encode(&state.sbc, input.baseAddress! + offset, pcmBytesPerFrame, out.baseAddress, out.count, &written)
                    }
                }
                guard consumed > 0, written > 0 else { throw BluetoothAudioError("libsbc could not encode a frame (\(consumed))") }
                state.frames.append(Array(output.prefix(written)))
                offset += consumed
            }
            state.pending.removeFirst(offset)
            var packets: [[UInt8]] = []
            while state.frames.count >= framesPerPacket {
                packets.append(Self.packet(&state, count: framesPerPacket, samplesPerFrame: samplesPerFrame))
            }
            return packets
        }
    }

    public func flush() -> [[UInt8]] {
        state.withLock { state in
            state.frames.isEmpty ? [] : [Self.packet(&state, count: state.frames.count, samplesPerFrame: samplesPerFrame)]
        }
    }

    /// Frames per packet: as many as fit the MTU after the headers (at most 15, the 4-bit frame count).
    public var framesPerPacket: Int { max(1, min(15, (mtu - 13) / encodedFrameLength)) }

    private static func packet(_ state: inout State, count: Int, samplesPerFrame: Int) -> [UInt8] {
        var packet: [UInt8] = [0x80, 96]
        packet += [UInt8(state.sequence >> 8), UInt8(state.sequence & 0xFF)]
        packet += [24, 16, 8, 0].map { UInt8((state.timestamp >> UInt32($0)) & 0xFF) }
        packet += [0, 0, 0, 1]  // SSRC
        packet.append(UInt8(count))
        for frame in state.frames.prefix(count) { packet += frame }
        state.frames.removeFirst(count)
        state.sequence &+= 1
        state.timestamp &+= UInt32(count * samplesPerFrame)
        return packet
    }
}
