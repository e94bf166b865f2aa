import HTTPServing
import LiveStreaming
import MediaRouteTestSupport
import RoutingModel
import Testing
@testable import VideoStreaming

/// H.264 an app encoded (`AcquireVideo("h264", …)`) in both containers, without the box's
/// encoder: numbered pictures encoded beforehand, decoded by FFmpeg from what a device fetches.
@Suite(.timeLimit(.minutes(1))) struct EncodedVideoStreamTests {
    let raw = try! VideoFrameFormat(encoding: .i420, width: 160, height: 96, frameRateNumerator: 25)
    var encoded: VideoFrameFormat { try! VideoFrameFormat(encoding: .h264, width: 160, height: 96, frameRateNumerator: 25) }

    /// Pictures `0..<count` as the app's access units, an IDR every `intraPeriod`.
    func accessUnits(_ count: Int, intraPeriod: Int) throws -> [H264Encoder.AccessUnit] {
        var encoder = try H264Encoder(format: raw, bitRate: 300_000, intraPeriod: intraPeriod, screenContent: false)
        return try (0..<count).map { number in
            try #require(try encoder.encode(VideoTestPattern.frame(number, format: raw), encoding: .i420, timestamp: .milliseconds(number * 40)))
        }
    }

    func frame(_ unit: H264Encoder.AccessUnit, _ number: Int) -> VideoFrame {
        VideoFrame(format: encoded, presentationTime: .milliseconds(1000 + number * 40), data: unit.bytes)
    }

    func read(_ response: HTTPServerResponse) -> [UInt8] { response.liveBytes }

    func numbers(_ bytes: [UInt8], container: String) throws -> [Int?] {
        let ffmpeg = try requireTool("/usr/bin/ffmpeg")
        let gray = try runTool(ffmpeg, ["-v", "error", "-f", container, "-i", "pipe:0", "-f", "rawvideo", "-pix_fmt", "gray", "pipe:1"], input: bytes)
        let size = raw.width * raw.height
        return stride(from: 0, to: gray.count - size + 1, by: size).map {
            VideoTestPattern.number(inGray: Array(gray[$0..<$0 + size]), width: raw.width, height: raw.height)
        }
    }

    func fetch(_ stream: LiveVideoStream) -> HTTPServerResponse {
        stream.response(to: HTTPServerRequest(method: "GET", path: "/video", headers: [:], body: []))
    }

    @Test func theAppsAccessUnitsPlayInATransportStreamAndALaterFetchStartsAtItsNextIDR() throws {
        let units = try accessUnits(40, intraPeriod: 10)
        let stream = try LiveVideoStream(format: encoded)
        #expect(stream.codec == "H.264 (the app's) in MPEG-TS")
        let first = fetch(stream)
        for number in 0..<15 { #expect(stream.receive(frame(units[number], number))) }
        let later = fetch(stream)  // no encoder to ask for an IDR: the app's next one (picture 20)
        for number in 15..<40 { #expect(stream.receive(frame(units[number], number))) }
        stream.finish()
        #expect(try numbers(read(first), container: "mpegts") == (0..<40).map { $0 })
        #expect(try numbers(read(later), container: "mpegts") == (20..<40).map { $0 })
        // What the app wrote, per second: 40 pictures at 25/s.
        let written = units.reduce(0) { $0 + $1.bytes.count }
        #expect(abs(stream.bitrate - written * 8 * 25 / 40) < 2_000, "\(stream.bitrate)")
    }

    @Test func anMP4FetchedBeforeThePicturesGetsTheInitializationSegmentOfTheFirstIDR() throws {
        let units = try accessUnits(30, intraPeriod: 10)
        let stream = try LiveVideoStream(format: encoded, container: .fragmentedMP4)
        let early = fetch(stream)  // the Cast receiver fetches as soon as it is told to play
        #expect(stream.bytes.header.isEmpty)
        // A picture that is no IDR cannot start an MP4 stream: not taken, no header made of it.
        #expect(!stream.receive(frame(units[1], 1)))
        #expect(stream.bytes.header.isEmpty && stream.bytes.statistics.bytesWritten == 0)
        for number in 0..<15 { #expect(stream.receive(frame(units[number], number))) }
        let later = fetch(stream)
        for number in 15..<30 { #expect(stream.receive(frame(units[number], number))) }
        stream.finish()
        let whole = read(early)
        #expect(Array(whole[4..<8]) == Array("ftyp".utf8))
        #expect(try numbers(whole, container: "mp4") == (0..<30).map { $0 })
        #expect(try numbers(read(later), container: "mp4") == (20..<30).map { $0 })
    }
}
