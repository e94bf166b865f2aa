public import RoutingModel
import Testing

/// Pictures that say which frame they are: a row of 16 black or white blocks across the top
/// (the frame number in binary, most significant first, between a white block on the left and
/// a black one on the right), and a moving gradient below so the encoder has motion to code.
/// A decoder's picture is read back at any size (``number(inGray:width:height:)``).
public enum VideoTestPattern {
    static let bits = 16
    /// Blocks across: a white start block, the bits, a black end block.
    static let blocks = bits + 2

    /// Picture `number` of `format` (I420 or NV12 as the format says).
    public static func frame(_ number: Int, format: VideoFrameFormat) -> [UInt8] {
        let width = format.width
        let height = format.height
        var data = [UInt8](repeating: 128, count: format.frameBytes)
        let band = Self.band(width: width, height: height)
        for y in 0..<height {
            for x in 0..<width {
                let value: UInt8
                if y < band {
                    let index = x * blocks / width
                    let white = index == 0 ? true : index == blocks - 1 ? false : (number >> (bits - index)) & 1 == 1
                    value = white ? 235 : 16
                } else {
                    value = UInt8(32 + (x + y + number * 4) % 192)
                }
                data[y * width + x] = value
            }
        }
        return data
    }

    /// Writes `number`'s band over a picture of `format` (another picture of the pattern, or any),
    /// so a benchmark cycles a few pictures and still numbers each one it writes.
    public static func stamp(_ number: Int, into picture: inout [UInt8], format: VideoFrameFormat) {
        let width = format.width
        let band = Self.band(width: width, height: format.height)
        var row = [UInt8](repeating: 16, count: width)
        for x in 0..<width {
            let index = x * blocks / width
            let white = index == 0 ? true : index == blocks - 1 ? false : (number >> (bits - index)) & 1 == 1
            row[x] = white ? 235 : 16
        }
        picture.withUnsafeMutableBufferPointer { pixels in
            row.withUnsafeBufferPointer { source in
                for y in 0..<band { (pixels.baseAddress! + y * width).update(from: source.baseAddress!, count: width) }
            }
        }
    }

    /// Rows of the number's band: as tall as a block is wide, at most a third of the picture.
    static func band(width: Int, height: Int) -> Int { min(height / 3, max(width / blocks, 8)) }

    /// The frame number a picture (8-bit luma, `width`×`height`) shows; nil when the blocks do
    /// not read as the pattern (a picture of something else, or too damaged).
    public static func number(inGray gray: [UInt8], width: Int, height: Int) -> Int? {
        guard gray.count >= width * height, width >= blocks else { return nil }
        let y = band(width: width, height: height) / 2
        func white(_ index: Int) -> Bool? {
            let x = Int((Double(index) + 0.5) * Double(width) / Double(blocks))
            let value = Int(gray[y * width + x])
            return value > 170 ? true : value < 80 ? false : nil
        }
        guard white(0) == true, white(blocks - 1) == false else { return nil }
        var number = 0
        for index in 1...bits {
            guard let bit = white(index) else { return nil }
            number = number << 1 | (bit ? 1 : 0)
        }
        return number
    }

    /// Pictures `numbers` of `format` (I420) as a YUV4MPEG2 stream, as FFmpeg writes one.
    public static func yuv4mpeg2(_ numbers: Range<Int>, format: VideoFrameFormat) -> [UInt8] {
        var bytes = Array("YUV4MPEG2 W\(format.width) H\(format.height) F\(format.frameRateNumerator):\(format.frameRateDenominator) Ip A1:1 C420jpeg\n".utf8)
        for number in numbers { bytes += Array("FRAME\n".utf8) + frame(number, format: format) }
        return bytes
    }

    /// Pictures `numbers` as H.264 an app encoded: an Annex B stream from FFmpeg's libx264
    /// (a test tool here, never shipped), no B-frames, an IDR every `intraPeriod` pictures.
    public static func h264(_ numbers: Range<Int>, format: VideoFrameFormat, intraPeriod: Int) throws -> [UInt8] {
        let ffmpeg = try requireTool("/usr/bin/ffmpeg")
        let raw = try VideoFrameFormat(
            encoding: .i420, width: format.width, height: format.height, frameRateNumerator: format.frameRateNumerator,
            frameRateDenominator: format.frameRateDenominator)
        return try runTool(
            ffmpeg,
            ["-v", "error", "-f", "yuv4mpegpipe", "-i", "pipe:0", "-c:v", "libx264", "-bf", "0", "-g", "\(intraPeriod)", "-tune", "zerolatency", "-f", "h264", "pipe:1"],
            input: yuv4mpeg2(numbers, format: raw))
    }
}
