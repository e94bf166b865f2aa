import CAVCodec

/// FLAC frames of a live stream: FFmpeg's encoder (libavcodec, opened at run time when the
/// first FLAC stream starts, as for ALAC and AAC), fixed blocks of ``framesPerBlock`` frames.
///
/// One per stream, used under its ``LiveAudioStream``'s lock (the encoder keeps state between
/// blocks and is not shared). Every method that calls into FFmpeg is `@inline(never)`: the
/// shim's table of FFmpeg's functions is one per object file (CAVCodec/shim.h), and the one
/// this file fills is the one its calls must read.
final class FLACLiveEncoder: LiveFrameEncoder {
    /// Frames per FLAC frame: 1 152 (26 ms at 44.1 kHz), short for a live stream (a block is
    /// sent when it is full), long enough that the frame headers cost little.
    static let framesPerBlock = 1_152
    /// FFmpeg's fastest level: a live stream favours the box's CPU over the last few bytes.
    static let compressionLevel: Int32 = 0

    /// The stream's start: `fLaC` and its STREAMINFO, marked as the last metadata block.
    let header: [UInt8]
    private let encoder: UnsafeMutablePointer<mr_av_encoder>
    private let bytesPerBlock: Int
    /// Where the encoder writes a frame: far more than a 1 152-frame block ever takes.
    private static let outputCapacity: Int32 = 64 * 1024
    private let output = UnsafeMutablePointer<UInt8>.allocate(capacity: Int(outputCapacity))

    /// An encoder of interleaved 16-bit PCM at `sampleRate` with `channels`, or why there is none.
    @inline(never)
    static func make(sampleRate: Int, channels: Int) -> Result<FLACLiveEncoder, LiveAudioEncoderError> {
        var error = [CChar](repeating: 0, count: 256)
        guard (1...8).contains(channels), (1...655_350).contains(sampleRate),
            let encoder = mr_flac_open(Int32(sampleRate), Int32(channels), Int32(framesPerBlock), compressionLevel, &error, error.count)
        else {
            return .failure(LiveAudioEncoderError(reported: error, otherwise: "no FLAC encoder for \(channels) channels at \(sampleRate) Hz"))
        }
        var streamInfo = [UInt8](repeating: 0, count: 64)
        let length = mr_flac_streaminfo(encoder, &streamInfo, Int32(streamInfo.count))
        guard length == 34 else {
            mr_flac_close(encoder)
            return .failure(LiveAudioEncoderError(reason: "FFmpeg's FLAC encoder gave no STREAMINFO"))
        }
        // Metadata block header: last block (0x80) of type STREAMINFO (0), 34 bytes long.
        let header = Array("fLaC".utf8) + [0x80, 0, 0, 34] + streamInfo.prefix(34)
        return .success(FLACLiveEncoder(encoder: encoder, header: header, bytesPerBlock: framesPerBlock * channels * 2))
    }

    private init(encoder: UnsafeMutablePointer<mr_av_encoder>, header: [UInt8], bytesPerBlock: Int) {
        self.encoder = encoder
        self.header = header
        self.bytesPerBlock = bytesPerBlock
    }

    @inline(never)
    deinit {
        mr_flac_close(encoder)
        output.deallocate()
    }

    /// One FLAC frame of exactly one block of interleaved S16LE `pcm`; empty when the encoder failed.
    @inline(never)
    func encode(_ pcm: ArraySlice<UInt8>) -> [UInt8] {
        guard pcm.count == bytesPerBlock else { return [] }
        let length = pcm.withUnsafeBufferPointer { samples in
            mr_flac_encode(encoder, samples.baseAddress, output, Self.outputCapacity)
        }
        return length > 0 ? Array(UnsafeBufferPointer(start: output, count: Int(length))) : []
    }

    var framesPerBlock: Int { Self.framesPerBlock }
}

/// An encoder of a live stream's blocks of PCM (FLAC, MP3): each block a frame a device may
/// start at. One per stream, used under its ``LiveAudioStream``'s lock.
protocol LiveFrameEncoder: AnyObject {
    /// What every reader gets first (FLAC's `fLaC` and STREAMINFO; nothing for MP3).
    var header: [UInt8] { get }
    /// Frames of PCM per block.
    var framesPerBlock: Int { get }
    /// The encoded bytes of exactly one block of interleaved S16LE samples (an encoder that
    /// holds frames back may return none yet, or several frames at once).
    func encode(_ pcm: ArraySlice<UInt8>) -> [UInt8]
}

/// Why a compressed live stream has no encoder (libavcodec missing on the box, or refusing the format).
public struct LiveAudioEncoderError: Error, Sendable, Hashable, CustomStringConvertible {
    public let reason: String
    public var description: String { reason }

    public init(reason: String) {
        self.reason = reason
    }

    /// The reason the shim wrote into `reported` (a C string), or `otherwise` when it wrote none.
    init(reported: [CChar], otherwise: String) {
        let text = String(decoding: reported.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        reason = text.isEmpty ? otherwise : text
    }
}
