import CAVCodec

/// AAC-LC frames of a live stream in ADTS, for renderers that list `audio/aac` (or DLNA's
/// `audio/vnd.dlna.adts`) and no PCM, FLAC or MP3: FFmpeg's native `aac` encoder (libavcodec,
/// opened at run time; its `twoloop` coder), 1 024 frames of PCM a block, ``bitRate``. Each
/// access unit goes out behind its own 7-byte ADTS header, so a device that joins mid-stream
/// starts at any frame (ADTS is how AAC is streamed without a container; FFmpeg puts the same
/// header on in its muxer, which this package does not load).
///
/// One per stream, used under its owner's lock (a ``LiveAudioStream``'s; a video stream's, which
/// muxes a route's audio beside its pictures). Every method that calls into
/// FFmpeg is `@inline(never)` and in this file, for the reason FLACLiveEncoder gives.
public final class AACLiveEncoder: LiveFrameEncoder {
    /// An AAC-LC access unit's samples.
    public static let framesPerBlock = 1_024
    /// 256 kbit/s for stereo (transparent for AAC-LC; renderers fill their buffer by bytes).
    static let bitRate: Int32 = 256_000

    let header: [UInt8] = []
    public var framesPerBlock: Int { Self.framesPerBlock }
    private let encoder: UnsafeMutablePointer<mr_av_encoder>
    private let bytesPerBlock: Int
    /// The ADTS header's fixed part: sampling frequency index and channel configuration.
    private let frequencyIndex: UInt8
    private let channels: UInt8
    private static let outputCapacity: Int32 = 16 * 1024
    private let output = UnsafeMutablePointer<UInt8>.allocate(capacity: Int(outputCapacity))

    /// ADTS's sampling frequency indices (ISO/IEC 14496-3, 1.6.3.4) for the rates a box sends.
    static let frequencyIndices: [Int: UInt8] = [48_000: 3, 44_100: 4, 32_000: 5]

    /// An encoder of interleaved 16-bit PCM at `sampleRate` with `channels`, or why there is none.
    @inline(never)
    public static func make(sampleRate: Int, channels: Int) -> Result<AACLiveEncoder, LiveAudioEncoderError> {
        var error = [CChar](repeating: 0, count: 256)
        guard (1...2).contains(channels), let index = frequencyIndices[sampleRate],
            let encoder = mr_aac_open(Int32(sampleRate), Int32(channels), bitRate / Int32(3 - channels), "twoloop", &error, error.count)
        else {
            return .failure(LiveAudioEncoderError(reported: error, otherwise: "no AAC encoder for \(channels) channels at \(sampleRate) Hz"))
        }
        guard mr_aac_frame_size(encoder) == Int32(framesPerBlock) else {
            mr_aac_close(encoder)
            return .failure(LiveAudioEncoderError(reason: "FFmpeg's AAC encoder does not take 1024-frame blocks"))
        }
        return .success(AACLiveEncoder(encoder: encoder, bytesPerBlock: framesPerBlock * channels * 2, frequencyIndex: index, channels: UInt8(channels)))
    }

    private init(encoder: UnsafeMutablePointer<mr_av_encoder>, bytesPerBlock: Int, frequencyIndex: UInt8, channels: UInt8) {
        self.encoder = encoder
        self.bytesPerBlock = bytesPerBlock
        self.frequencyIndex = frequencyIndex
        self.channels = channels
    }

    @inline(never)
    deinit {
        mr_aac_close(encoder)
        output.deallocate()
    }

    /// One block's access unit behind its ADTS header (none for the first blocks: the encoder
    /// holds its priming back).
    @inline(never)
    public func encode(_ pcm: ArraySlice<UInt8>) -> [UInt8] {
        guard pcm.count == bytesPerBlock else { return [] }
        let length = pcm.withUnsafeBufferPointer { samples in
            mr_aac_encode(encoder, samples.baseAddress, output, Self.outputCapacity)
        }
        guard length > 0 else { return [] }
        return Self.adtsHeader(payload: Int(length), frequencyIndex: frequencyIndex, channels: channels)
            + Array(UnsafeBufferPointer(start: output, count: Int(length)))
    }

    /// ADTS's 7-byte header (no CRC) for an AAC-LC access unit of `payload` bytes: sync word,
    /// MPEG-4, layer 0, no CRC; profile LC; the frequency index; private 0; the channel
    /// configuration; the frame length (header included, 13 bits); buffer fullness 0x7FF
    /// (variable rate); one raw data block.
    static func adtsHeader(payload: Int, frequencyIndex: UInt8, channels: UInt8) -> [UInt8] {
        let length = payload + 7
        return [
            0xFF, 0xF1,
            (1 << 6) | (frequencyIndex << 2) | (channels >> 2),
            ((channels & 3) << 6) | UInt8(truncatingIfNeeded: length >> 11),
            UInt8(truncatingIfNeeded: length >> 3),
            UInt8(truncatingIfNeeded: (length & 7) << 5) | 0x1F,
            0xFC,
        ]
    }
}
