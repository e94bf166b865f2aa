import CAVCodec

/// AAC-LC access units of 16-bit stereo at 44.1 kHz for a buffered AirPlay 2 stream: FFmpeg's
/// native encoder (libavcodec, opened when such a stream starts), 1 024 frames a unit, 256
/// kbit/s, raw (the receiver adds the ADTS header itself).
///
/// One per stream, used only inside its ``RAOPStream`` actor. The encoder holds one unit back
/// and its decoder's output starts with ``priming`` frames before the first input frame: the
/// stream's timestamps count decoded frames, so input frame 0 is at the first timestamp plus that.
final class AirPlayAACEncoder {
    static let framesPerUnit = 1_024
    private let encoder: UnsafeMutablePointer<mr_av_encoder>
    /// Decoded frames before input frame 0 (FFmpeg: 1 024).
    let priming: Int
    private var output = [UInt8](repeating: 0, count: 8 * 1024)

    /// An encoder, or why there is none (libavcodec missing, no AAC encoder in it).
    static func make() -> Result<AirPlayAACEncoder, TextError> {
        var error = [CChar](repeating: 0, count: 256)
        guard let encoder = mr_aac_open(44_100, 2, 256_000, "twoloop", &error, error.count) else {
            return .failure(TextError(String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)))
        }
        guard mr_aac_frame_size(encoder) == Int32(framesPerUnit) else {
            mr_aac_close(encoder)
            return .failure(TextError("FFmpeg's AAC encoder does not take 1024-frame blocks"))
        }
        return .success(AirPlayAACEncoder(encoder: encoder, priming: Int(max(0, mr_aac_initial_padding(encoder)))))
    }

    private init(encoder: UnsafeMutablePointer<mr_av_encoder>, priming: Int) {
        self.encoder = encoder
        self.priming = priming
    }

    deinit { mr_aac_close(encoder) }

    /// The next access unit for 1 024 frames of interleaved stereo S16LE, or nil while the
    /// encoder holds it back (or on an encoder error, which loses the unit: logged by the caller
    /// as a gap, never a crash).
    func encode(_ pcm: ArraySlice<UInt8>) -> [UInt8]? {
        guard pcm.count == Self.framesPerUnit * 4 else { return nil }
        let length = pcm.withUnsafeBufferPointer { samples in
            output.withUnsafeMutableBufferPointer { out in mr_aac_encode(encoder, samples.baseAddress, out.baseAddress, Int32(out.count)) }
        }
        return length > 0 ? Array(output.prefix(Int(length))) : nil
    }

    /// Why an encoder could not be made.
    struct TextError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
