import COpenH264
public import RoutingModel

/// H.264 Constrained Baseline from raw pictures, with OpenH264 (opened at run time).
///
/// Low-latency settings: no B-frames (baseline has none, so each picture leaves the encoder
/// as it is encoded), one slice, one reference frame, an IDR every ``intraPeriod`` pictures
/// (and at once when ``forceIntraFrame()`` is asked: a new reader waits for one), SPS and PPS
/// before every IDR. Output is Annex B, one access unit per picture.
/// Not thread-safe: one thread (the route's video thread) uses it.
public struct H264Encoder: ~Copyable {
    /// Why an encoder could not be made or a picture encoded.
    public struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
        public var description: String
    }

    /// One encoded picture.
    public struct AccessUnit: Sendable {
        /// NAL units, each behind a start code.
        public var bytes: [UInt8]
        public var isIDR: Bool
    }

    public let format: VideoFrameFormat
    public let intraPeriod: Int
    public let bitRate: Int
    private let encoder: OpaquePointer
    private var output: [UInt8]
    private var planes: [UInt8] = []
    private var forceIDR = false

    /// - Parameters:
    ///   - bitRate: bits per second aimed at.
    ///   - intraPeriod: pictures from an IDR to the next (a reader joining waits up to this long).
    ///   - screenContent: tunes for a desktop (text, flat areas) rather than a camera.
    public init(format: VideoFrameFormat, bitRate: Int, intraPeriod: Int, screenContent: Bool = false) throws(Failure) {
        var error = [CChar](repeating: 0, count: 256)
        guard
            let encoder = mr_h264_new(
                Int32(format.width), Int32(format.height), Float(format.frameRate), Int32(clamping: bitRate), UInt32(clamping: max(1, intraPeriod)),
                screenContent ? 1 : 0, &error, error.count)
        else {
            throw Failure(description: "H.264 encoder (OpenH264): " + String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        self.encoder = encoder
        self.format = format
        self.bitRate = bitRate
        self.intraPeriod = intraPeriod
        // An access unit is far smaller than its raw picture at any bit rate a stream runs at;
        // one that is not is refused (counted), never written past the buffer.
        self.output = [UInt8](repeating: 0, count: format.frameBytes + 65_536)
    }

    deinit { mr_h264_free(encoder) }

    /// The version of the library found, or why none can be opened.
    public static var libraryVersion: String {
        var text = [CChar](repeating: 0, count: 256)
        mr_h264_version(&text, text.count)
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The stream's SPS and PPS (Annex B); they stay the same for the stream's life.
    public func parameterSets() throws(Failure) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var written = 0
        let result = buffer.withUnsafeMutableBufferPointer { mr_h264_parameter_sets(encoder, $0.baseAddress!, 4096, &written) }
        guard result == 0, written > 0 else { throw Failure(description: "OpenH264 gave no parameter sets") }
        return Array(buffer[0..<written])
    }

    /// The NAL units of an Annex B byte stream, start codes off.
    public static func nalUnits(_ stream: [UInt8]) -> [ArraySlice<UInt8>] {
        var units: [ArraySlice<UInt8>] = []
        var index = 0
        var start: Int? = nil
        while index + 2 < stream.count {
            if stream[index] == 0, stream[index + 1] == 0, stream[index + 2] == 1 {
                if let begin = start {
                    var end = index
                    if end > begin, stream[end - 1] == 0 { end -= 1 }  // a four-byte start code's leading zero
                    units.append(stream[begin..<end])
                }
                index += 3
                start = index
            } else {
                index += 1
            }
        }
        if let begin = start, begin < stream.count { units.append(stream[begin...]) }
        return units.filter { !$0.isEmpty }
    }

    /// The next picture is encoded as an IDR.
    public mutating func forceIntraFrame() { forceIDR = true }


    /// Encodes one picture of ``format`` (I420 or NV12, ``VideoFrameFormat/frameBytes`` bytes);
    /// nil when the encoder skipped it.
    public mutating func encode(_ picture: [UInt8], encoding: VideoFrameFormat.Encoding, timestamp: Duration) throws(Failure) -> AccessUnit? {
        let width = format.width
        let height = format.height
        guard picture.count == format.frameBytes else {
            throw Failure(description: "a picture of \(picture.count) bytes, not \(format.frameBytes)")
        }
        let lumaBytes = width * height
        let chromaBytes = lumaBytes / 4
        let milliseconds = Int64(timestamp / .milliseconds(1))
        let force: Int32 = forceIDR ? 1 : 0
        forceIDR = false
        var written = 0
        var idr: Int32 = 0
        var result: Int32 = 0
        if encoding == .nv12 {
            // Interleaved chroma into the planes OpenH264 takes.
            if planes.count != chromaBytes * 2 { planes = [UInt8](repeating: 0, count: chromaBytes * 2) }
            picture.withUnsafeBufferPointer { source in
                planes.withUnsafeMutableBufferPointer { target in
                    let uv = source.baseAddress! + lumaBytes
                    for index in 0..<chromaBytes {
                        target[index] = uv[2 * index]
                        target[chromaBytes + index] = uv[2 * index + 1]
                    }
                }
            }
        }
        let capacity = output.count
        output.withUnsafeMutableBufferPointer { out in
            picture.withUnsafeBufferPointer { source in
                let y = source.baseAddress!
                if encoding == .nv12 {
                    planes.withUnsafeBufferPointer { chroma in
                        result = mr_h264_encode(
                            encoder, y, chroma.baseAddress!, chroma.baseAddress! + chromaBytes, Int32(width), Int32(width / 2), milliseconds, force,
                            out.baseAddress!, capacity, &written, &idr)
                    }
                } else {
                    result = mr_h264_encode(
                        encoder, y, y + lumaBytes, y + lumaBytes + chromaBytes, Int32(width), Int32(width / 2), milliseconds, force, out.baseAddress!,
                        capacity, &written, &idr)
                }
            }
        }
        switch result {
        case 0: break
        case -2: throw Failure(description: "an access unit larger than \(capacity) bytes")
        default: throw Failure(description: "OpenH264 refused the picture")
        }
        guard written > 0 else { return nil }
        return AccessUnit(bytes: Array(output[0..<written]), isIDR: idr != 0)
    }
}
