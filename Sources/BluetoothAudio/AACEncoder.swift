import CAVCodec
import Synchronization

/// MPEG-4 AAC-LC through FFmpeg's native `aac` encoder (libavcodec, opened at run time), in
/// A2DP media packets as A2DP's AAC profile frames them: a 12-byte RTP header (payload type
/// 96, timestamp in samples), then one LATM `AudioMuxElement` with its `StreamMuxConfig` in
/// band (muxConfigPresent = 1, as PipeWire and bluez-alsa send it) carrying one access unit of
/// 1024 frames. An element larger than the MTU is split over packets with the marker bit on
/// the last (RFC 3016 §4.1); the bit rate is chosen so that this is rare.
public final class AACEncoder: BluetoothAudioEncoder {
    private struct State {
        var encoder: OpaquePointer?
        var pending: [UInt8] = []
        var accessUnit: [UInt8]
        var sequence: UInt16 = 0
        var timestamp: UInt32 = 0
        var bitrate: Int
    }

    public let pcmBytesPerFrame: Int
    public let mtu: Int
    public let configuration: AACCapabilities
    /// The bit rate the configuration and the MTU allow: the highest it steps back up to.
    public let targetBitrate: Int
    private let framesPerAccessUnit: Int
    private let state: Mutex<State>

    /// The lowest bit rate a congested link steps down to.
    public static let minimumBitrate = 64_000

    /// The bit rate for a configuration: its own (≤ 320 kbit/s), at most what leaves an
    /// average access unit within one packet of `mtu`.
    public static func targetBitrate(_ configuration: AACCapabilities, mtu: Int?) -> Int {
        var rate = configuration.bitrate == 0 ? AACCapabilities.maximumBitrate : min(configuration.bitrate, AACCapabilities.maximumBitrate)
        if let mtu, let sampleRate = configuration.sampleRate {
            // RTP header, LATM header (about 8 bytes) and a margin for the frames above average.
            let payload = max(64, mtu - 12 - 8)
            rate = min(rate, payload * 8 * sampleRate / 1024 * 4 / 5)
        }
        if configuration.channelCount == 1 { rate = min(rate, 160_000) }
        return max(minimumBitrate, rate)
    }

    /// - Parameters:
    ///   - a2dpConfiguration: the transport's `Configuration` (6 bytes of A2DP AAC capabilities, one of each).
    ///   - coder: FFmpeg's `aac_coder`: `twoloop` (FFmpeg's default, and the cheaper here: 2.3 % of
    ///     a core per stream against `fast`'s 4.2 %, `mediaroute-bench bt-codecs`) or `fast`.
    public init(a2dpConfiguration: [UInt8], mtu: Int, coder: String = "twoloop") throws(BluetoothAudioError) {
        guard let configuration = AACCapabilities(bytes: a2dpConfiguration), let sampleRate = configuration.sampleRate,
            let channels = configuration.channelCount
        else { throw BluetoothAudioError("AAC configuration \(a2dpConfiguration) is not one configuration") }
        guard mtu >= 64 else { throw BluetoothAudioError("an MTU of \(mtu) is too small for AAC") }
        let bitrate = Self.targetBitrate(configuration, mtu: mtu)
        var message = [CChar](repeating: 0, count: 256)
        // The encoder codes the channels the configuration chose; stereo input is downmixed for one.
        guard let encoder = mr_aac_open(Int32(sampleRate), Int32(channels), Int32(bitrate), coder, &message, message.count) else {
            throw BluetoothAudioError("AAC: \(A2DPCodec.string(message))")
        }
        framesPerAccessUnit = Int(mr_aac_frame_size(encoder))
        self.configuration = configuration
        self.mtu = mtu
        targetBitrate = bitrate
        pcmBytesPerFrame = framesPerAccessUnit * 4
        state = Mutex(State(encoder: OpaquePointer(encoder), accessUnit: [UInt8](repeating: 0, count: 8192), bitrate: bitrate))
    }

    deinit {
        state.withLock { state in
            if let encoder = state.encoder { mr_aac_close(UnsafeMutablePointer(encoder)) }
            state.encoder = nil
        }
    }

    public var bitrate: Int { state.withLock { $0.bitrate } }

    public func stepBitrate(down: Bool) -> Bool {
        state.withLock { state in
            let ladder = Set([64_000, 96_000, 128_000, 160_000, 192_000, 256_000, 320_000].filter { $0 < targetBitrate } + [targetBitrate]).sorted()
            guard let index = ladder.firstIndex(of: state.bitrate) else { return false }
            let next = ladder[down ? max(0, index - 1) : min(ladder.count - 1, index + 1)]
            guard next != state.bitrate, let encoder = state.encoder else { return false }
            state.bitrate = next
            mr_aac_set_bit_rate(UnsafeMutablePointer(encoder), Int32(next))
            return true
        }
    }

    public func packets(from pcm: [UInt8]) throws(BluetoothAudioError) -> [[UInt8]] {
        try state.withLock { (state: inout State) throws(BluetoothAudioError) -> [[UInt8]] in
            guard let encoder = state.encoder else { return [] }
            state.pending += pcm
            var offset = 0
            var packets: [[UInt8]] = []
            let channels = configuration.channelCount ?? 2
            while state.pending.count - offset >= pcmBytesPerFrame {
                let length: Int32 = state.pending.withUnsafeBytes { input in
                    if channels == 1 {
                        // One channel: the mean of left and right, as S16.
                        var mono = [UInt8](repeating: 0, count: framesPerAccessUnit * 2)
                        for frame in 0..<framesPerAccessUnit {
                            let base = offset + frame * 4
                            let left = Int32(Int16(bitPattern: UInt16(input[base]) | UInt16(input[base + 1]) << 8))
                            let right = Int32(Int16(bitPattern: UInt16(input[base + 2]) | UInt16(input[base + 3]) << 8))
                            let mean = UInt16(bitPattern: Int16((left + right) / 2))
                            mono[frame * 2] = UInt8(truncatingIfNeeded: mean)
                            mono[frame * 2 + 1] = UInt8(truncatingIfNeeded: mean >> 8)
                        }
                        return mono.withUnsafeBytes { bytes in
                            state.accessUnit.withUnsafeMutableBytes { out in
                                mr_aac_encode(UnsafeMutablePointer(encoder), bytes.baseAddress, out.baseAddress, Int32(out.count))
                            }
                        }
                    }
                    return state.accessUnit.withUnsafeMutableBytes { out in
                        mr_aac_encode(UnsafeMutablePointer(encoder), input.baseAddress! + offset, out.baseAddress, Int32(out.count))
                    }
                }
                offset += pcmBytesPerFrame
                guard length >= 0 else { throw BluetoothAudioError("the AAC encoder failed (FFmpeg error \(length))") }
                if length > 0 { Self.emit(&state, length: Int(length), configuration: configuration, mtu: mtu, frames: framesPerAccessUnit, into: &packets) }
            }
            state.pending.removeFirst(offset)
            return packets
        }
    }

    /// What the encoder still holds (its look-ahead), as the last packets.
    public func flush() -> [[UInt8]] {
        state.withLock { state in
            guard let encoder = state.encoder else { return [] }
            var packets: [[UInt8]] = []
            for _ in 0..<4 {
                let length = state.accessUnit.withUnsafeMutableBytes { out in
                    mr_aac_encode(UnsafeMutablePointer(encoder), nil, out.baseAddress, Int32(out.count))
                }
                guard length > 0 else { break }
                Self.emit(&state, length: Int(length), configuration: configuration, mtu: mtu, frames: framesPerAccessUnit, into: &packets)
            }
            return packets
        }
    }

    private static func emit(_ state: inout State, length: Int, configuration: AACCapabilities, mtu: Int, frames: Int, into packets: inout [[UInt8]]) {
        let element = LATM.audioMuxElement(accessUnit: state.accessUnit[0..<length], configuration: configuration)
        var start = 0
        repeat {
            let end = min(element.count, start + mtu - 12)
            var packet: [UInt8] = []
            packet.reserveCapacity(12 + end - start)
            appendRTPHeader(&packet, sequence: state.sequence, timestamp: state.timestamp, marker: end == element.count)
            packet += element[start..<end]
            packets.append(packet)
            state.sequence &+= 1
            start = end
        } while start < element.count
        state.timestamp &+= UInt32(frames)
    }
}
