public import RoutingModel

/// Reads YUV4MPEG2 (`.y4m`), the raw-frame format video tools write and read (FFmpeg,
/// GStreamer's `y4menc`, x264): a header line `YUV4MPEG2 W… H… F…:… …`, then each frame as a
/// `FRAME…` line and its planes.
///
/// Bytes are fed as they come (``feed(_:)``); memory is one frame and a line, whatever is fed.
/// Only 8-bit 4:2:0 is taken (the layout of I420); interlacing and aspect are read and ignored.
public struct YUV4MPEG2Parser: Sendable {
    /// Longest header or frame line taken (real ones are under 100 bytes).
    public static let maximumLineLength = 1024

    /// The stream's pictures, once the header was read.
    public private(set) var format: VideoFrameFormat?
    private var line: [UInt8] = []
    private var frame: [UInt8] = []
    private var inFrame = false

    public init() {}

    /// Takes `bytes` and returns the frames they complete, in order (I420, ``VideoFrameFormat/frameBytes`` each).
    public mutating func feed(_ bytes: some Collection<UInt8>) throws(YUV4MPEG2Error) -> [[UInt8]] {
        var frames: [[UInt8]] = []
        var index = bytes.startIndex
        while index != bytes.endIndex {
            if inFrame, let format {
                let wanted = format.frameBytes - frame.count
                let end = bytes.index(index, offsetBy: wanted, limitedBy: bytes.endIndex) ?? bytes.endIndex
                frame.append(contentsOf: bytes[index..<end])
                index = end
                if frame.count == format.frameBytes {
                    frames.append(frame)
                    frame = []
                    frame.reserveCapacity(format.frameBytes)
                    inFrame = false
                }
                continue
            }
            let byte = bytes[index]
            index = bytes.index(after: index)
            if byte != 0x0A {
                guard line.count < Self.maximumLineLength else { throw .lineTooLong(Self.maximumLineLength) }
                line.append(byte)
                // A stream that does not start with the signature is refused at once, not after a kilobyte.
                if format == nil, line.count <= 10, !Self.signature.starts(with: line) { throw .notYUV4MPEG2 }
                continue
            }
            if format == nil {
                format = try Self.header(line)
            } else {
                guard line.starts(with: Self.frameMarker), line.count == 5 || line[5] == 0x20 else { throw .missingFrameMarker }
                inFrame = true
            }
            line.removeAll(keepingCapacity: true)
        }
        return frames
    }

    /// Checks the stream ended between frames.
    public func finish() throws(YUV4MPEG2Error) {
        if inFrame, let format { throw .truncatedFrame(bytes: frame.count, expected: format.frameBytes) }
        if format == nil { throw .notYUV4MPEG2 }
        if !line.isEmpty { throw .missingFrameMarker }
    }

    static let signature = Array("YUV4MPEG2 ".utf8)
    static let frameMarker = Array("FRAME".utf8)

    /// The format a header line declares.
    static func header(_ line: [UInt8]) throws(YUV4MPEG2Error) -> VideoFrameFormat {
        guard line.starts(with: signature) else { throw .notYUV4MPEG2 }
        var width: Int?
        var height: Int?
        var rate: (Int, Int)?
        for token in line.dropFirst(signature.count).split(separator: 0x20) {
            guard let tag = token.first else { continue }
            let value = String(decoding: token.dropFirst(), as: UTF8.self)
            switch tag {
            case UInt8(ascii: "W"): width = try number(value, "W")
            case UInt8(ascii: "H"): height = try number(value, "H")
            case UInt8(ascii: "F"):
                let parts = value.split(separator: ":", omittingEmptySubsequences: false)
                guard parts.count == 2 else { throw .badParameter("F\(value)") }
                rate = (try number(String(parts[0]), "F"), try number(String(parts[1]), "F"))
            case UInt8(ascii: "C"):
                guard ["420", "420jpeg", "420mpeg2", "420paldv"].contains(value) else { throw .unsupportedColourSpace(value) }
            default:
                break  // I (interlacing), A (aspect), X (comments): read and ignored.
            }
        }
        guard let width else { throw .badParameter("W missing") }
        guard let height else { throw .badParameter("H missing") }
        guard let rate else { throw .badParameter("F missing") }
        do {
            return try VideoFrameFormat(encoding: .i420, width: width, height: height, frameRateNumerator: rate.0, frameRateDenominator: rate.1)
        } catch {
            throw .unsupportedFormat(error.message)
        }
    }

    private static func number(_ text: String, _ tag: String) throws(YUV4MPEG2Error) -> Int {
        guard !text.isEmpty, text.count <= 9, text.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int(text) else {
            throw .badParameter("\(tag)\(text.prefix(16))")
        }
        return value
    }

    /// The header line of a stream of `format` (I420 or NV12 pictures are written as C420jpeg).
    public static func headerLine(for format: VideoFrameFormat) -> [UInt8] {
        Array("YUV4MPEG2 W\(format.width) H\(format.height) F\(format.frameRateNumerator):\(format.frameRateDenominator) Ip A1:1 C420jpeg\n".utf8)
    }
}
