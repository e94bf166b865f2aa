import CAVCodec
import RAOP

/// ALAC frames of 16-bit stereo at 44.1 kHz for a RAOP stream: FFmpeg's encoder
/// (libavcodec, opened when the first stream starts), or, where libavcodec is missing,
/// uncompressed ALAC frames, which every receiver decodes at about twice the bit rate.
///
/// One per stream, used only inside its ``RAOPStream`` actor (the encoder keeps state
/// between frames and is not shared).
final class ALACEncoder {
    /// What the SDP announces for the frames this encoder makes.
    let configuration: ALACConfiguration
    /// Why frames go out uncompressed; nil when FFmpeg encodes them.
    let fallbackReason: String?
    private let encoder: UnsafeMutablePointer<mr_av_encoder>?
    private var output = [UInt8](repeating: 0, count: 8 * 1024)

    init() {
        var error = [CChar](repeating: 0, count: 256)
        let frames = Int32(ALACUncompressed.framesPerPacket)
        guard let encoder = mr_alac_open(44_100, 2, frames, &error, error.count) else {
            self.encoder = nil
            configuration = .standard
            fallbackReason = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return
        }
        var cookie = [UInt8](repeating: 0, count: 64)
        let length = mr_alac_cookie(encoder, &cookie, Int32(cookie.count))
        // The cookie describes 4096-sample frames; the stream's frames are 352 samples, each with its count.
        guard length > 0, var parsed = ALACConfiguration(magicCookie: Array(cookie.prefix(Int(length)))),
            parsed.channels == 2, parsed.bitDepth == 16, parsed.sampleRate == 44_100
        else {
            mr_alac_close(encoder)
            self.encoder = nil
            configuration = .standard
            fallbackReason = "FFmpeg's ALAC encoder describes a stream RAOP does not carry"
            return
        }
        parsed.framesPerPacket = UInt32(frames)
        self.encoder = encoder
        configuration = parsed
        fallbackReason = nil
    }

    deinit {
        mr_alac_close(encoder)
    }

    /// One ALAC frame of interleaved stereo S16LE `pcm` (at most 352 whole frames).
    func encode(_ pcm: ArraySlice<UInt8>) -> [UInt8] {
        let frames = pcm.count / 4
        if let encoder, frames > 0 {
            let length = pcm.withUnsafeBufferPointer { samples in
                output.withUnsafeMutableBufferPointer { out in
                    mr_alac_encode(encoder, samples.baseAddress, Int32(frames), out.baseAddress, Int32(out.count))
                }
            }
            if length > 0 { return Array(output.prefix(Int(length))) }
        }
        // An encoder error loses no audio: the same samples, uncompressed (the receiver reads both).
        return ALACUncompressed.frame(stereoS16LE: pcm)
    }
}
