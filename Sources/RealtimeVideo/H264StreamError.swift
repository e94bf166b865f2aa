/// Why an app's H.264 (`AcquireVideo("h264", …)`) was refused; the route's video ends with it.
public enum H264StreamError: Error, Sendable, Hashable, CustomStringConvertible {
    /// No start code in the first bytes: the writer sends something else (raw pictures, MP4).
    case notAnnexB
    /// A NAL unit whose forbidden bit is set: the bytes are not H.264.
    case forbiddenBit
    /// An access unit (or a NAL unit) past its budget in bytes.
    case accessUnitTooLarge(limit: Int)
    /// A slice or parameter set that cannot be read.
    case malformed(String)
    /// B slices: pictures that come in another order than they show are not taken.
    case bidirectionalSlices
    /// The stream's pictures are another size than the one declared.
    case sizeMismatch(declared: String, stream: String)
    /// A profile or layout the video path does not send (4:2:0 8-bit only).
    case unsupported(String)

    public var description: String {
        switch self {
        case .notAnnexB: "not an H.264 Annex B stream (no start code in its first bytes)"
        case .forbiddenBit: "not an H.264 stream (a NAL unit with its forbidden bit set)"
        case .accessUnitTooLarge(let limit): "an H.264 access unit of more than \(limit) bytes"
        case .malformed(let what): "malformed H.264: \(what)"
        case .bidirectionalSlices: "H.264 with B-frames is not taken: encode without them (x264 --bframes 0, ffmpeg -bf 0)"
        case .sizeMismatch(let declared, let stream): "the H.264 stream's pictures are \(stream), not \(declared) as acquired"
        case .unsupported(let what): "H.264 \(what) is not taken: only 8-bit 4:2:0"
        }
    }
}
