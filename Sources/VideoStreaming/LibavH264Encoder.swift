import CAVCodec
public import RoutingModel

/// An H.264 encoder of libavcodec chosen by name and opened at run time: a box's hardware
/// encoder (`h264_v4l2m2m`, the V4L2 memory-to-memory encoder SoCs have), tried before the
/// software encoder (``LiveVideoSettings/hardwareEncoders``). Low latency: no B-frames, an IDR
/// every `intraPeriod` pictures, one access unit (Annex B) per picture.
///
/// Used under its ``LiveVideoStream``'s lock. Every method that calls into FFmpeg is
/// `@inline(never)` and in this file, for the reason the shim gives (its table is per object file).
public final class LibavH264Encoder {
    public let name: String
    public let format: VideoFrameFormat
    private let encoder: UnsafeMutablePointer<mr_av_encoder>
    private var output: [UInt8]
    private var pictures: Int64 = 0

    /// - Throws: the reason this libavcodec (or the box) has no such encoder for `format`.
    @inline(never)
    public init(name: String, format: VideoFrameFormat, bitRate: Int, intraPeriod: Int) throws(H264Encoder.Failure) {
        guard format.encoding.isRaw else { throw H264Encoder.Failure(description: "\(name) encodes raw pictures, not \(format.encoding.rawValue)") }
        var error = [CChar](repeating: 0, count: 256)
        guard
            let opened = mr_video_open(
                name, Int32(format.width), Int32(format.height), Int32(clamping: format.frameRateNumerator), Int32(clamping: format.frameRateDenominator),
                Int32(clamping: bitRate), Int32(clamping: intraPeriod), format.encoding == .nv12 ? 1 : 0, &error, error.count)
        else {
            throw H264Encoder.Failure(description: String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        self.name = name
        self.format = format
        self.encoder = opened
        self.output = [UInt8](repeating: 0, count: format.frameBytes + 65_536)
    }

    @inline(never)
    deinit { mr_video_close(encoder) }

    /// Encodes one picture of ``format`` (``VideoFrameFormat/frameBytes`` bytes); nil when the
    /// encoder gave nothing for it yet.
    @inline(never)
    public func encode(_ picture: [UInt8], forceIDR: Bool) throws(H264Encoder.Failure) -> H264Encoder.AccessUnit? {
        guard picture.count == format.frameBytes else { throw H264Encoder.Failure(description: "a picture of \(picture.count) bytes, not \(format.frameBytes)") }
        let luma = format.width * format.height
        var idr: Int32 = 0
        let capacity = Int32(clamping: output.count)
        let pts = pictures
        pictures += 1
        let length = output.withUnsafeMutableBufferPointer { out in
            picture.withUnsafeBufferPointer { source in
                let y = source.baseAddress!
                return mr_video_encode(encoder, y, y + luma, y + luma + luma / 4, pts, forceIDR ? 1 : 0, out.baseAddress!, capacity, &idr)
            }
        }
        guard length >= 0 else { throw H264Encoder.Failure(description: "\(name) refused the picture (FFmpeg error \(length))") }
        guard length > 0 else { return nil }
        return H264Encoder.AccessUnit(bytes: Array(output[0..<Int(length)]), isIDR: idr != 0)
    }
}
