import CAVCodec

/// MP3 frames of a live stream, for renderers that list only `audio/mpeg`: FFmpeg's
/// `libmp3lame` encoder (libavcodec, opened at run time like FLAC's), 1 152 frames of PCM a
/// block, constant ``bitRate``, no bit reservoir (each MP3 frame decodes on its own, so a
/// device that joins mid-stream starts at any frame).
///
/// One per stream, used under its ``LiveAudioStream``'s lock. Every method that calls into
/// FFmpeg is `@inline(never)` and in this file, for the reason FLACLiveEncoder gives.
final class MP3LiveEncoder: LiveFrameEncoder {
    /// An MPEG-1 Layer III frame's samples.
    static let framesPerBlock = 1_152
    /// The highest MPEG-1 rate: renderers fill their buffer by bytes, so more bytes start
    /// them sooner, and the quality is LAME's best constant rate.
    static let bitRate: Int32 = 320_000

    let header: [UInt8] = []
    var framesPerBlock: Int { Self.framesPerBlock }
    private let encoder: UnsafeMutablePointer<mr_av_encoder>
    private let bytesPerBlock: Int
    /// Far more than the frames one block can release (a 320 kbit/s frame is 1 045 bytes).
    private static let outputCapacity: Int32 = 64 * 1024
    private let output = UnsafeMutablePointer<UInt8>.allocate(capacity: Int(outputCapacity))

    /// An encoder of interleaved 16-bit PCM at `sampleRate` with `channels`, or why there is none.
    @inline(never)
    static func make(sampleRate: Int, channels: Int) -> Result<MP3LiveEncoder, LiveAudioEncoderError> {
        var error = [CChar](repeating: 0, count: 256)
        guard (1...2).contains(channels), [32_000, 44_100, 48_000].contains(sampleRate),
            let encoder = mr_mp3_open(Int32(sampleRate), Int32(channels), bitRate, &error, error.count)
        else {
            return .failure(LiveAudioEncoderError(reported: error, otherwise: "no MP3 encoder for \(channels) channels at \(sampleRate) Hz"))
        }
        return .success(MP3LiveEncoder(encoder: encoder, bytesPerBlock: framesPerBlock * channels * 2))
    }

    private init(encoder: UnsafeMutablePointer<mr_av_encoder>, bytesPerBlock: Int) {
        self.encoder = encoder
        self.bytesPerBlock = bytesPerBlock
    }

    @inline(never)
    deinit {
        mr_mp3_close(encoder)
        output.deallocate()
    }

    @inline(never)
    func encode(_ pcm: ArraySlice<UInt8>) -> [UInt8] {
        guard pcm.count == bytesPerBlock else { return [] }
        let length = pcm.withUnsafeBufferPointer { samples in
            mr_mp3_encode(encoder, samples.baseAddress, output, Self.outputCapacity)
        }
        return length > 0 ? Array(UnsafeBufferPointer(start: output, count: Int(length))) : []
    }
}
