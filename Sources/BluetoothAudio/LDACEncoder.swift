import CBluetoothCodecs
import Synchronization

/// LDAC through AOSP's encoder (Debian's libldacbt-enc, opened at run time), in A2DP media
/// packets as Android and PipeWire send them: a 12-byte RTP header, one byte with the number of
/// LDAC frames, then the frames the library packed for the MTU. The library takes 128 frames
/// of PCM per call and hands out a packet's worth of frames when it has them.
///
/// The bit rate is one of LDAC's three qualities (990/660/330 kbit/s at 48 kHz, 909/606/303 at
/// 44.1). With libldacbt-abr on the box its adaptive bit rate moves between them from the depth
/// of the socket's send queue (``observeQueue(packets:)``); without it ``stepBitrate(down:)``
/// moves one quality at a time as for the other codecs.
public final class LDACEncoder: BluetoothAudioEncoder {
    private struct State {
        var handle: OpaquePointer?
        var abr: OpaquePointer?
        var pending: [UInt8] = []
        var stream: [UInt8]
        var sequence: UInt16 = 0
        var timestamp: UInt32 = 0
        var samplesSincePacket = 0
    }

    public let mtu: Int
    public let sampleRate: Int
    public let channelMode: UInt8
    /// 128 stereo S16 frames: what the library takes per call.
    public let pcmBytesPerFrame = 128 * 4
    /// Whether libldacbt-abr drives the bit rate.
    public let adaptive: Bool
    private let state: Mutex<State>

    /// - Parameter quality: the quality without the adaptive bit rate: 0 high, 1 standard (the default), 2 mobile.
    public init(a2dpConfiguration: [UInt8], mtu: Int, quality: Int32 = 1) throws(BluetoothAudioError) {
        guard let configuration = LDACCapabilities(bytes: a2dpConfiguration), let sampleRate = configuration.sampleRate,
            configuration.channelModes.nonzeroBitCount == 1
        else { throw BluetoothAudioError("LDAC configuration \(a2dpConfiguration) is not one configuration") }
        var message = [CChar](repeating: 0, count: 256)
        guard mr_ldac_open(&message, message.count) == 0 else { throw BluetoothAudioError("LDAC: \(A2DPCodec.string(message))") }
        guard let handle = mr_ldac_get_handle() else { throw BluetoothAudioError("LDAC: no encoder handle") }
        let abr = mr_ldac_abr_open()
        // With the adaptive bit rate the encoder starts at the top quality and the ABR steps it.
        let start = abr != nil ? Int32(MR_LDACBT_EQMID_HQ) : quality
        guard mr_ldac_init_encode(handle, Int32(mtu), start, Int32(configuration.channelModes), Int32(sampleRate)) == 0 else {
            let code = mr_ldac_get_error_code(handle)
            mr_ldac_free_handle(handle)
            if let abr { mr_ldac_abr_free(abr) }
            throw BluetoothAudioError("LDAC refused the configuration (MTU \(mtu), \(sampleRate) Hz; error \(code))")
        }
        self.mtu = mtu
        self.sampleRate = sampleRate
        channelMode = configuration.channelModes
        adaptive = abr != nil
        state = Mutex(State(handle: handle, abr: abr, stream: [UInt8](repeating: 0, count: max(1024, mtu))))
    }

    deinit {
        state.withLock { state in
            if let handle = state.handle { mr_ldac_free_handle(handle) }
            if let abr = state.abr { mr_ldac_abr_free(abr) }
            state.handle = nil
            state.abr = nil
        }
    }

    /// The bit rate of the quality now, in bits per second.
    public var bitrate: Int {
        state.withLock { state in
            guard let handle = state.handle else { return 0 }
            return Int(mr_ldac_get_bitrate(handle)) * 1000
        }
    }

    /// The quality now: 0 high, 1 standard, 2 mobile.
    public var quality: Int {
        state.withLock { state in
            guard let handle = state.handle else { return -1 }
            return Int(mr_ldac_get_eqmid(handle))
        }
    }

    public func stepBitrate(down: Bool) -> Bool {
        guard !adaptive else { return false }
        return state.withLock { state in
            guard let handle = state.handle else { return false }
            let now = mr_ldac_get_eqmid(handle)
            let next = down ? min(now + 1, Int32(MR_LDACBT_EQMID_MQ)) : max(now - 1, Int32(MR_LDACBT_EQMID_HQ))
            guard next != now else { return false }
            return mr_ldac_set_eqmid(handle, next) == 0
        }
    }

    public func observeQueue(packets: Int) {
        state.withLock { state in
            guard let handle = state.handle, let abr = state.abr else { return }
            _ = mr_ldac_abr_proc(handle, abr, UInt32(clamping: packets))
        }
    }

    public func packets(from pcm: [UInt8]) throws(BluetoothAudioError) -> [[UInt8]] {
        try state.withLock { (state: inout State) throws(BluetoothAudioError) -> [[UInt8]] in
            guard let handle = state.handle else { return [] }
            state.pending += pcm
            var offset = 0
            var packets: [[UInt8]] = []
            let mono = channelMode == 0x04
            var input = [UInt8](repeating: 0, count: pcmBytesPerFrame)
            while state.pending.count - offset >= pcmBytesPerFrame {
                var inputLength = pcmBytesPerFrame
                if mono {
                    // One channel: the mean of left and right.
                    for frame in 0..<128 {
                        let base = offset + frame * 4
                        let left = Int32(Int16(bitPattern: UInt16(state.pending[base]) | UInt16(state.pending[base + 1]) << 8))
                        let right = Int32(Int16(bitPattern: UInt16(state.pending[base + 2]) | UInt16(state.pending[base + 3]) << 8))
                        let mean = UInt16(bitPattern: Int16((left + right) / 2))
                        input[frame * 2] = UInt8(truncatingIfNeeded: mean)
                        input[frame * 2 + 1] = UInt8(truncatingIfNeeded: mean >> 8)
                    }
                    inputLength = 256
                } else {
                    for index in 0..<pcmBytesPerFrame { input[index] = state.pending[offset + index] }
                }
                var used: Int32 = 0
                var written: Int32 = 0
                var frames: Int32 = 0
                let result = input.withUnsafeMutableBytes { pcmBytes in
                    state.stream.withUnsafeMutableBytes { out in
                        mr_ldac_encode(handle, pcmBytes.baseAddress, &used, out.bindMemory(to: UInt8.self).baseAddress, &written, &frames)
                    }
                }
                guard result == 0, Int(used) == inputLength else {
                    throw BluetoothAudioError("LDAC could not encode (error \(mr_ldac_get_error_code(handle)))")
                }
                offset += pcmBytesPerFrame
                state.samplesSincePacket += 128
                if written > 0 {
                    guard Int(written) + 13 <= mtu, written <= Int32(state.stream.count) else {
                        throw BluetoothAudioError("LDAC wrote \(written) bytes for an MTU of \(mtu)")
                    }
                    var packet: [UInt8] = []
                    packet.reserveCapacity(13 + Int(written))
                    appendRTPHeader(&packet, sequence: state.sequence, timestamp: state.timestamp)
                    packet.append(UInt8(truncatingIfNeeded: frames) & 0x0F)
                    packet += state.stream[0..<Int(written)]
                    packets.append(packet)
                    state.sequence &+= 1
                    state.timestamp &+= UInt32(state.samplesSincePacket)
                    state.samplesSincePacket = 0
                }
            }
            state.pending.removeFirst(offset)
            return packets
        }
    }

    /// LDAC keeps frames until a packet is full; the stream's end pads nothing (the last
    /// fraction of a packet is dropped, at most a few milliseconds).
    public func flush() -> [[UInt8]] { [] }
}
