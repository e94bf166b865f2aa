import CBluetoothCodecs
import Synchronization

/// aptX and aptX HD through libfreeaptx (opened at run time). The library codes 24-bit stereo
/// four frames at a time into 4 bytes (aptX) or 6 (HD); our 16-bit input is widened. A2DP
/// carries aptX codewords bare (no RTP header, as every aptX source sends them) and aptX HD
/// after a 12-byte RTP header; each packet takes as many whole codewords as fit the MTU.
public final class AptXEncoder: BluetoothAudioEncoder {
    private struct State {
        var context: OpaquePointer?
        var pending: [UInt8] = []
        var encoded: [UInt8] = []
        var wide: [UInt8] = []
        var sequence: UInt16 = 0
        var timestamp: UInt32 = 0
    }

    public let highDefinition: Bool
    public let mtu: Int
    public let sampleRate: Int
    /// Four stereo S16 frames: the unit the codec takes.
    public let pcmBytesPerFrame = 16
    /// Bytes of one codeword (four frames).
    let codewordLength: Int
    let payloadLength: Int
    private let state: Mutex<State>

    public init(a2dpConfiguration: [UInt8], highDefinition: Bool, mtu: Int) throws(BluetoothAudioError) {
        guard let configuration = AptXCapabilities(bytes: a2dpConfiguration, highDefinition: highDefinition),
            let sampleRate = configuration.sampleRate, configuration.channelModes == 0x2
        else { throw BluetoothAudioError("\(highDefinition ? "aptX HD" : "aptX") configuration \(a2dpConfiguration) is not one stereo configuration") }
        var message = [CChar](repeating: 0, count: 256)
        guard mr_aptx_open(&message, message.count) == 0, let context = mr_aptx_init(highDefinition ? 1 : 0) else {
            throw BluetoothAudioError("aptX: \(A2DPCodec.string(message))")
        }
        self.highDefinition = highDefinition
        self.mtu = mtu
        self.sampleRate = sampleRate
        codewordLength = highDefinition ? 6 : 4
        let header = highDefinition ? 12 : 0
        payloadLength = (mtu - header) / codewordLength * codewordLength
        guard payloadLength >= codewordLength else {
            mr_aptx_finish(context)
            throw BluetoothAudioError("an MTU of \(mtu) is too small for aptX")
        }
        state = Mutex(State(context: context))
    }

    deinit {
        state.withLock { state in
            if let context = state.context { mr_aptx_finish(context) }
            state.context = nil
        }
    }

    public var bitrate: Int { sampleRate * 2 * (highDefinition ? 24 : 16) / 4 }

    public func packets(from pcm: [UInt8]) throws(BluetoothAudioError) -> [[UInt8]] {
        try state.withLock { (state: inout State) throws(BluetoothAudioError) -> [[UInt8]] in
            guard let context = state.context else { return [] }
            state.pending += pcm
            let usable = state.pending.count / pcmBytesPerFrame * pcmBytesPerFrame
            if usable > 0 {
                // S16 to S24 little-endian: the sample in the top two bytes.
                state.wide.removeAll(keepingCapacity: true)
                state.wide.reserveCapacity(usable / 2 * 3)
                for index in stride(from: 0, to: usable, by: 2) {
                    state.wide.append(0)
                    state.wide.append(state.pending[index])
                    state.wide.append(state.pending[index + 1])
                }
                let start = state.encoded.count
                let capacity = usable / pcmBytesPerFrame * codewordLength
                state.encoded += [UInt8](repeating: 0, count: capacity)
                var written = 0
                let consumed = state.wide.withUnsafeBytes { input in
                    state.encoded.withUnsafeMutableBytes { out in
                        mr_aptx_encode(context, input.baseAddress, input.count, out.baseAddress! + start, capacity, &written)
                    }
                }
                guard consumed == state.wide.count, written == capacity else {
                    throw BluetoothAudioError("libfreeaptx encoded \(consumed) of \(state.wide.count) bytes")
                }
                state.pending.removeFirst(usable)
            }
            var packets: [[UInt8]] = []
            while state.encoded.count >= payloadLength {
                packets.append(Self.packet(&state, length: payloadLength, hd: highDefinition, codeword: codewordLength))
            }
            return packets
        }
    }

    public func flush() -> [[UInt8]] {
        state.withLock { state in
            state.encoded.isEmpty ? [] : [Self.packet(&state, length: state.encoded.count, hd: highDefinition, codeword: codewordLength)]
        }
    }

    private static func packet(_ state: inout State, length: Int, hd: Bool, codeword: Int) -> [UInt8] {
        var packet: [UInt8] = []
        packet.reserveCapacity(length + 12)
        if hd { appendRTPHeader(&packet, sequence: state.sequence, timestamp: state.timestamp) }
        packet += state.encoded[0..<length]
        state.encoded.removeFirst(length)
        state.sequence &+= 1
        state.timestamp &+= UInt32(length / codeword * 4)
        return packet
    }
}
