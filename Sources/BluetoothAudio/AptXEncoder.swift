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
                // S16 to S24 little-endian (the sample in the top two bytes), into buffers kept
                // between calls: no allocation once they have grown to a delivery's size.
                let wideCount = usable / 2 * 3
                if state.wide.count < wideCount { state.wide = [UInt8](repeating: 0, count: wideCount) }
                state.pending.withUnsafeBufferPointer { input in
                    state.wide.withUnsafeMutableBufferPointer { wide in
                        var out = 0
                        for index in stride(from: 0, to: usable, by: 2) {
                            wide[out] = 0
                            wide[out + 1] = input[index]
                            wide[out + 2] = input[index + 1]
                            out += 3
                        }
                    }
                }
                let start = state.encoded.count
                let capacity = usable / pcmBytesPerFrame * codewordLength
                state.encoded.append(contentsOf: repeatElement(0, count: capacity))
                var written = 0
                let consumed = state.wide.withUnsafeBytes { input in
                    state.encoded.withUnsafeMutableBytes { out in
                        mr_aptx_encode(context, input.baseAddress, wideCount, out.baseAddress! + start, capacity, &written)
                    }
                }
                guard consumed == wideCount, written == capacity else {
                    throw BluetoothAudioError("libfreeaptx encoded \(consumed) of \(wideCount) bytes")
                }
                state.pending.removeFirst(usable)
            }
            var packets: [[UInt8]] = []
            var offset = 0
            while state.encoded.count - offset >= payloadLength {
                packets.append(Self.packet(&state, from: offset, length: payloadLength, hd: highDefinition, codeword: codewordLength))
                offset += payloadLength
            }
            state.encoded.removeFirst(offset)
            return packets
        }
    }

    public func flush() -> [[UInt8]] {
        state.withLock { state in
            guard !state.encoded.isEmpty else { return [] }
            let packet = Self.packet(&state, from: 0, length: state.encoded.count, hd: highDefinition, codeword: codewordLength)
            state.encoded.removeAll(keepingCapacity: true)
            return [packet]
        }
    }

    private static func packet(_ state: inout State, from offset: Int, length: Int, hd: Bool, codeword: Int) -> [UInt8] {
        var packet: [UInt8] = []
        packet.reserveCapacity(length + 12)
        if hd { appendRTPHeader(&packet, sequence: state.sequence, timestamp: state.timestamp) }
        packet += state.encoded[offset..<(offset + length)]
        state.sequence &+= 1
        state.timestamp &+= UInt32(length / codeword * 4)
        return packet
    }
}
