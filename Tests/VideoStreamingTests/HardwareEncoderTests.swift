import HTTPServing
import LiveStreaming
import MediaRouteTestSupport
import RoutingModel
import Testing
@testable import VideoStreaming

/// The libavcodec encoder path a box's hardware encoder (`h264_v4l2m2m`) takes. This machine has
/// no V4L2 memory-to-memory or VA-API device, so the plumbing is driven here by a software
/// encoder of the same libavcodec by name (libx264, a test stand-in, never chosen by default):
/// pictures in, access units out, an IDR when a device fetches again, both containers.
@Suite(.timeLimit(.minutes(1))) struct HardwareEncoderTests {
    let format = try! VideoFrameFormat(encoding: .i420, width: 160, height: 96, frameRateNumerator: 25)

    func read(_ response: HTTPServerResponse) -> [UInt8] { response.liveBytes }

    func numbers(_ bytes: [UInt8], container: String) throws -> [Int?] {
        let ffmpeg = try requireTool("/usr/bin/ffmpeg")
        let gray = try runTool(
            ffmpeg, ["-v", "error", "-f", container, "-i", "pipe:0", "-map", "0:v", "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "gray", "pipe:1"],
            input: bytes)
        let size = format.width * format.height
        return stride(from: 0, to: gray.count - size + 1, by: size).map {
            VideoTestPattern.number(inGray: Array(gray[$0..<$0 + size]), width: format.width, height: format.height)
        }
    }

    func fetch(_ stream: LiveVideoStream) -> HTTPServerResponse {
        stream.response(to: HTTPServerRequest(method: "GET", path: "/video", headers: [:], body: []))
    }

    @Test(arguments: [LiveVideoStream.Container.mpegTS, .fragmentedMP4])
    func anEncoderOfLibavcodecByNameTakesThePictures(container: LiveVideoStream.Container) throws {
        let settings = LiveVideoSettings(bitRate: 300_000, intraPeriod: .seconds(10), hardwareEncoders: ["libx264"])
        let stream = try LiveVideoStream(format: format, container: container, settings: settings)
        #expect(stream.hardwareEncoder == "libx264", "\(stream.hardwareEncoderRefusals)")
        #expect(stream.codec == (container == .mpegTS ? "H.264 (libx264) in MPEG-TS" : "H.264 (libx264) in fragmented MP4"))
        let first = fetch(stream)
        for number in 0..<15 {
            #expect(stream.receive(VideoFrame(format: format, presentationTime: .milliseconds(1000 + number * 40), data: VideoTestPattern.frame(number, format: format))))
        }
        // Long before the next IDR of the period: the fetch asks the encoder for one.
        let later = fetch(stream)
        for number in 15..<30 {
            #expect(stream.receive(VideoFrame(format: format, presentationTime: .milliseconds(1000 + number * 40), data: VideoTestPattern.frame(number, format: format))))
        }
        stream.finish()
        let name = container == .mpegTS ? "mpegts" : "mp4"
        #expect(try numbers(read(first), container: name) == (0..<30).map { $0 })
        #expect(try numbers(read(later), container: name) == (15..<30).map { $0 })
    }

    @Test func encodersThatDoNotOpenArePassedOverForOpenH264() throws {
        // The default list on a box without a V4L2 memory-to-memory device, and a name no libavcodec has.
        let stream = try LiveVideoStream(format: format, settings: LiveVideoSettings(hardwareEncoders: ["no_such_encoder", "h264_v4l2m2m"]))
        #expect(stream.hardwareEncoder == nil)
        #expect(stream.codec == "H.264 in MPEG-TS")
        #expect(stream.hardwareEncoderRefusals.count == 2)
        #expect(stream.hardwareEncoderRefusals.first == "this libavcodec has no no_such_encoder encoder", "\(stream.hardwareEncoderRefusals)")
        #expect(stream.hardwareEncoderRefusals.last?.hasPrefix("h264_v4l2m2m would not open") == true, "\(stream.hardwareEncoderRefusals)")
        #expect(stream.receive(VideoFrame(format: format, presentationTime: .zero, data: VideoTestPattern.frame(0, format: format))))
    }
}
