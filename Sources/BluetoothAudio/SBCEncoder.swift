import CSbc
import Synchronization

/// SBC through libsbc, in A2DP media packets: a 12-byte RTP header (payload type
/// 96, sequence number, timestamp in samples), a 1-byte SBC payload header with
/// the frame count, then as many whole frames as fit the MTU.
///
/// The bitpool steps down (by 4) on a congested link and back up (by 2) to the configured one,
/// as PipeWire's SBC does: libsbc takes a new bitpool between frames.
public final class SBCEncoder: BluetoothAudioEncoder {
    private struct State {
        var sbc = sbc_t()
        var pending: [UInt8] = []
        var frames: [[UInt8]] = []
        var sequence: UInt16 = 0
        var timestamp: UInt32 = 0
        var encodedFrameLength = 0
    }

    public let pcmBytesPerFrame: Int
    public let mtu: Int
    /// The configuration's bitpool (its highest) and the lowest the encoder steps down to.
    public let maximumBitpool: UInt8
    public let minimumBitpool: UInt8
    private let sampleRate: Int
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
        // libsbc's A2DP set-up starts at bitpool 32 whatever the configuration says (212 kbit/s at
        // 44.1 kHz joint stereo); the configuration's maximum is the bitpool the speaker agreed to.
        if a2dpConfiguration[3] >= 2 { sbc.bitpool = a2dpConfiguration[3] }
        let codesize = sbc_get_codesize(&sbc)
        let frameLength = sbc_get_frame_length(&sbc)
        guard codesize > 0, frameLength > 0, 13 + frameLength <= mtu else {
            sbc_finish(&sbc)
            throw BluetoothAudioError("an SBC frame of \(frameLength) bytes does not fit an MTU of \(mtu)")
        }
        pcmBytesPerFrame = codesize
        samplesPerFrame = codesize / 4  // stereo S16: 4 bytes per sample pair; mono streams are upmixed by the caller
        self.mtu = mtu
        maximumBitpool = sbc.bitpool
        minimumBitpool = min(sbc.bitpool, max(a2dpConfiguration[2], 18))
        sampleRate = Self.sampleRate(a2dpConfiguration: a2dpConfiguration) ?? 44_100
        state = Mutex(State(sbc: sbc, encodedFrameLength: frameLength))
    }

    /// The frame length at the bitpool now.
    public var encodedFrameLength: Int { state.withLock { $0.encodedFrameLength } }
    /// The bitpool now.
    public var bitpool: UInt8 { state.withLock { $0.sbc.bitpool } }

    public var bitrate: Int {
        state.withLock { 8 * $0.encodedFrameLength * sampleRate / samplesPerFrame }
    }

    public func stepBitrate(down: Bool) -> Bool {
        state.withLock { state in
            let now = state.sbc.bitpool
            let next = down ? max(minimumBitpool, now > 4 ? now - 4 : now) : min(maximumBitpool, now + 2)
            guard next != now else { return false }
            state.sbc.bitpool = next
            state.encodedFrameLength = sbc_get_frame_length(&state.sbc)
            return true
        }
    }

    deinit {
        state.withLock { sbc_finish(&$0.sbc) }
    }

    public func packets(from pcm: [UInt8]) throws(BluetoothAudioError) -> [[UInt8]] {
        try state.withLock { (state: inout State) throws(BluetoothAudioError) -> [[UInt8]] in
            state.pending += pcm
            var offset = 0
            var output = [UInt8](repeating: 0, count: state.encodedFrameLength + 16)
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
            // Frames of two bitpools may wait together after a step: packets are filled by bytes.
            while let count = Self.fullPacket(state.frames, mtu: mtu, nextFrameLength: state.encodedFrameLength) {
                packets.append(Self.packet(&state, count: count, samplesPerFrame: samplesPerFrame))
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
    public var framesPerPacket: Int { Self.framesPerPacket(mtu: mtu, frameLength: encodedFrameLength) }

    static func framesPerPacket(mtu: Int, frameLength: Int) -> Int { max(1, min(15, (mtu - 13) / max(1, frameLength))) }

    /// How many of the waiting frames make a full packet (15 frames, or another frame of the
    /// length now would not fit the MTU); nil while they do not yet.
    static func fullPacket(_ frames: [[UInt8]], mtu: Int, nextFrameLength: Int) -> Int? {
        var bytes = 13
        for (index, frame) in frames.enumerated() {
            if index > 0, bytes + frame.count > mtu { return index }
            bytes += frame.count
            if index + 1 == 15 || bytes + nextFrameLength > mtu { return index + 1 }
        }
        return nil
    }

    private static func packet(_ state: inout State, count: Int, samplesPerFrame: Int) -> [UInt8] {
        var packet: [UInt8] = []
        packet.reserveCapacity(13 + count * state.encodedFrameLength)
        appendRTPHeader(&packet, sequence: state.sequence, timestamp: state.timestamp)
        packet.append(UInt8(count))
        for frame in state.frames.prefix(count) { packet += frame }
        state.frames.removeFirst(count)
        state.sequence &+= 1
        state.timestamp &+= UInt32(count * samplesPerFrame)
        return packet
    }
}
