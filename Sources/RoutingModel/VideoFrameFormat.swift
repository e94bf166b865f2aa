/// What an app writes into a route's real-time video (`Session1.AcquireVideo`): raw pictures of
/// one size at a declared frame rate, or H.264 it already encoded.
///
/// Raw pictures are 8-bit 4:2:0, the layout screen-cast streams, cameras and YUV4MPEG2 files
/// use: I420 (the Y plane, then U, then V, each chroma plane a quarter of Y) or NV12 (Y, then
/// U and V interleaved). Every frame is exactly ``frameBytes`` bytes, so a reader of a stream
/// socket needs no framing. H.264 comes as an Annex B byte stream (start codes before each NAL
/// unit, as `ffmpeg -f h264` and hardware encoders write it), split into access units on the
/// way.
public struct VideoFrameFormat: Sendable, Hashable, Codable, CustomStringConvertible {
    /// How a picture's bytes are laid out.
    public enum Encoding: String, Sendable, Hashable, Codable, CaseIterable {
        /// Planar Y, U, V (YUV4MPEG2's `C420`, PipeWire's `I420`).
        case i420
        /// Y, then U and V interleaved (what most cameras and hardware decoders give).
        case nv12
        /// H.264 an app already encoded: an Annex B byte stream of pictures of the declared size,
        /// without B-frames (each picture is shown in the order it comes).
        case h264

        /// Whether pictures come raw (to be encoded on the box).
        public var isRaw: Bool { self != .h264 }
    }

    public var encoding: Encoding
    /// Picture size in pixels (even, 16…4096 × 16…2304: what H.264 level 5.1 takes).
    public var width: Int
    public var height: Int
    /// Frames per second as a fraction (30000/1001 for NTSC's 29.97).
    public var frameRateNumerator: Int
    public var frameRateDenominator: Int

    /// A format checked for what the video path takes; the error says what is wrong.
    public init(encoding: Encoding, width: Int, height: Int, frameRateNumerator: Int, frameRateDenominator: Int = 1) throws(MediaDeviceError) {
        guard (16...4096).contains(width), (16...2304).contains(height), width % 2 == 0, height % 2 == 0 else {
            throw MediaDeviceError(.invalidArgument, "a picture of \(width)x\(height): sizes are even, 16x16 to 4096x2304")
        }
        guard frameRateNumerator > 0, frameRateDenominator > 0, frameRateNumerator <= 120 * frameRateDenominator,
            frameRateNumerator >= frameRateDenominator
        else {
            throw MediaDeviceError(.invalidArgument, "\(frameRateNumerator)/\(frameRateDenominator) frames per second: 1 to 120 are taken")
        }
        self.encoding = encoding
        self.width = width
        self.height = height
        self.frameRateNumerator = frameRateNumerator
        self.frameRateDenominator = frameRateDenominator
    }

    /// Bytes of one raw picture (width × height × 3/2); for H.264, what one access unit may take
    /// at most besides its headers (an encoder's output stays well under a raw picture).
    public var frameBytes: Int { width * height * 3 / 2 }

    /// Frames per second.
    public var frameRate: Double { Double(frameRateNumerator) / Double(frameRateDenominator) }

    /// How long one frame shows.
    public var frameDuration: Duration { .nanoseconds(Int64(1_000_000_000) * Int64(frameRateDenominator) / Int64(frameRateNumerator)) }

    public var description: String {
        let rate = frameRateDenominator == 1 ? "\(frameRateNumerator)" : String(format2: frameRate)
        return "\(encoding.rawValue) \(width)x\(height)@\(rate)"
    }
}

extension String {
    /// Two decimals, without Foundation's formatting.
    fileprivate init(format2 value: Double) {
        let hundredths = Int((value * 100).rounded())
        let fraction = hundredths % 100
        self = "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}
