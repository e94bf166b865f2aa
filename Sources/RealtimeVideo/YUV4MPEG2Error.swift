/// Why a YUV4MPEG2 stream was refused.
public enum YUV4MPEG2Error: Error, Sendable, Hashable, CustomStringConvertible {
    /// The stream does not start with `YUV4MPEG2 `.
    case notYUV4MPEG2
    /// A header or frame line longer than any real one (the stream is not YUV4MPEG2, or broken).
    case lineTooLong(Int)
    /// A parameter that cannot be read (`W`, `H`, `F` missing or not numbers).
    case badParameter(String)
    /// A colour space the video path does not take (only 8-bit 4:2:0 is taken).
    case unsupportedColourSpace(String)
    /// Picture size or frame rate out of range (the reason from ``VideoFrameFormat``).
    case unsupportedFormat(String)
    /// A frame did not start with `FRAME`.
    case missingFrameMarker
    /// The stream ended inside a frame (`bytes` of `expected` came).
    case truncatedFrame(bytes: Int, expected: Int)

    public var description: String {
        switch self {
        case .notYUV4MPEG2: "not a YUV4MPEG2 stream (no YUV4MPEG2 signature)"
        case .lineTooLong(let count): "a YUV4MPEG2 header line of more than \(count) bytes"
        case .badParameter(let text): "YUV4MPEG2 parameter \(text)"
        case .unsupportedColourSpace(let space): "YUV4MPEG2 colour space \(space): only 4:2:0 8-bit (C420, C420jpeg, C420mpeg2, C420paldv) is taken"
        case .unsupportedFormat(let reason): reason
        case .missingFrameMarker: "a YUV4MPEG2 frame without its FRAME line"
        case .truncatedFrame(let bytes, let expected): "the YUV4MPEG2 stream ended inside a frame (\(bytes) of \(expected) bytes)"
        }
    }
}
