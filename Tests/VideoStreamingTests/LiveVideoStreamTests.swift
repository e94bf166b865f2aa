import HTTPServing
import LiveStreaming
import MediaRouteTestSupport
import RoutingModel
import Testing
@testable import VideoStreaming

/// A route's video as its device fetches it: each fetch starts at an IDR made for it.
@Suite(.timeLimit(.minutes(1))) struct LiveVideoStreamTests {
    func readAll(_ reader: LiveByteStream.Reader) -> [UInt8] {
        var out: [UInt8] = []
        while case .bytes(let bytes) = reader.read(maximum: 1 << 20) { out += bytes }
        return out
    }

    func frame(_ number: Int, _ format: VideoFrameFormat) -> VideoFrame {
        VideoFrame(format: format, presentationTime: .milliseconds(number * 40), data: VideoTestPattern.frame(number, format: format))
    }

    @Test func aReaderStartsAtTheIDRMadeForItAndDecodesFromItsFirstByte() throws {
        let ffmpeg = try requireTool("/usr/bin/ffmpeg")
        let format = try VideoFrameFormat(encoding: .i420, width: 192, height: 108, frameRateNumerator: 25)
        let stream = try LiveVideoStream(format: format, settings: LiveVideoSettings(bitRate: 300_000, intraPeriod: .seconds(10)))
        for number in 0..<20 { #expect(stream.receive(frame(number, format))) }
        // Long after the only IDR so far (picture 0): the reader is made one.
        let reader = stream.bytes.makeReader(atNextSyncPoint: true)
        #expect(reader.read(maximum: 1 << 20) == .empty)
        _ = stream.response(to: HTTPServerRequest(method: "GET", path: "/live.ts", headers: [:], body: []))  // a fetch asks the encoder for an IDR
        for number in 20..<30 { #expect(stream.receive(frame(number, format))) }
        stream.finish()
        let bytes = readAll(reader)
        #expect(bytes.count >= 4 && bytes[0] == 0x47 && bytes[1] & 0x1F == 0 && bytes[2] == 0, "the reader starts with a PAT packet")
        let gray = try runTool(ffmpeg, ["-v", "error", "-f", "mpegts", "-i", "pipe:0", "-f", "rawvideo", "-pix_fmt", "gray", "pipe:1"], input: bytes)
        let size = format.width * format.height
        let numbers = stride(from: 0, to: gray.count - size + 1, by: size).map {
            VideoTestPattern.number(inGray: Array(gray[$0..<$0 + size]), width: format.width, height: format.height)
        }
        #expect(numbers == (20..<30).map { $0 })
    }

    @Test func theFirstFetchGetsEveryPictureSinceTheStreamStarted() throws {
        let ffmpeg = try requireTool("/usr/bin/ffmpeg")
        let format = try VideoFrameFormat(encoding: .i420, width: 128, height: 72, frameRateNumerator: 25)
        let stream = try LiveVideoStream(format: format, settings: LiveVideoSettings(bitRate: 200_000, intraPeriod: .seconds(1)))
        for number in 0..<40 { #expect(stream.receive(frame(number, format))) }
        let response = stream.response(to: HTTPServerRequest(method: "GET", path: "/video.ts", headers: [:], body: []))
        guard case .live(let body, _) = response.body else { Issue.record("not a live body"); return }
        stream.finish()
        var bytes: [UInt8] = []
        while case .bytes(let chunk) = body.read(maximum: 1 << 20) { bytes += chunk }
        #expect(response.headers.contains { $0.0 == "Content-Type" && $0.1 == "video/mpeg" })
        let gray = try runTool(ffmpeg, ["-v", "error", "-f", "mpegts", "-i", "pipe:0", "-f", "rawvideo", "-pix_fmt", "gray", "pipe:1"], input: bytes)
        let size = format.width * format.height
        let numbers = stride(from: 0, to: gray.count - size + 1, by: size).map {
            VideoTestPattern.number(inGray: Array(gray[$0..<$0 + size]), width: format.width, height: format.height)
        }
        #expect(numbers == (0..<40).map { $0 })
    }

    @Test func aPictureOfAnotherSizeIsNotTaken() throws {
        let format = try VideoFrameFormat(encoding: .i420, width: 64, height: 64, frameRateNumerator: 30)
        let other = try VideoFrameFormat(encoding: .i420, width: 32, height: 32, frameRateNumerator: 30)
        let stream = try LiveVideoStream(format: format)
        #expect(!stream.receive(VideoFrame(format: other, presentationTime: .zero, data: VideoTestPattern.frame(0, format: other))))
        #expect(stream.bytes.statistics.bytesWritten == 0)
        #expect(stream.receive(frame(0, format)))
    }

    /// The route's audio in the transport stream: FFmpeg reads an H.264 and an AAC stream, the
    /// pictures in order, the tone whole, both starting together (AAC's encoder delay apart).
    @Test func theRoutesAudioIsMuxedBesideThePicturesOnOneClock() throws {
        let ffmpeg = try requireTool("/usr/bin/ffmpeg")
        let ffprobe = try requireTool("/usr/bin/ffprobe")
        let format = try VideoFrameFormat(encoding: .i420, width: 128, height: 72, frameRateNumerator: 25)
        let stream = try LiveVideoStream(format: format, settings: LiveVideoSettings(bitRate: 200_000, intraPeriod: .seconds(1)), audio: .cdAudio)
        #expect(stream.carriesAudio)
        let origin = Duration.seconds(1000)
        let pcm = tone(seconds: 2)
        // Pictures every 40 ms and audio in 100 ms batches, as a route's delivery hands them over, interleaved.
        for tick in 0..<20 {
            for number in (tick * 5 / 2)..<((tick + 1) * 5 / 2) {
                #expect(stream.receive(VideoFrame(format: format, presentationTime: origin + .milliseconds(number * 40), data: VideoTestPattern.frame(number, format: format))))
            }
            let batch = Array(pcm[(tick * 4_410 * 4)..<((tick + 1) * 4_410 * 4)])
            stream.receiveAudio(SampleBuffer(format: .cdAudio, presentationTime: origin + .milliseconds(tick * 100), frameCount: 4_410, data: batch))
        }
        stream.finish()
        let bytes = readAll(stream.bytes.makeReader(playingFrom: .zero))
        let report = String(decoding: try runTool(
            ffprobe, ["-v", "error", "-f", "mpegts", "-show_entries", "stream=codec_name,sample_rate,channels,start_time", "-of", "compact", "pipe:0"], input: bytes),
            as: UTF8.self)
        #expect(report.contains("codec_name=h264") && report.contains("codec_name=aac") && report.contains("sample_rate=44100"), "\(report)")
        let starts = report.split(separator: "\n").compactMap { line in
            line.split(separator: "|").first { $0.hasPrefix("start_time=") }.flatMap { Double($0.dropFirst("start_time=".count)) }
        }
        #expect(starts.count >= 2 && starts.max()! - starts.min()! < 0.001, "audio and video start together: \(report.replacingOccurrences(of: "\n", with: " / "))")
        let gray = try runTool(ffmpeg, ["-v", "error", "-f", "mpegts", "-i", "pipe:0", "-map", "0:v", "-f", "rawvideo", "-pix_fmt", "gray", "pipe:1"], input: bytes)
        let size = format.width * format.height
        let numbers = stride(from: 0, to: gray.count - size + 1, by: size).map {
            VideoTestPattern.number(inGray: Array(gray[$0..<$0 + size]), width: format.width, height: format.height)
        }
        #expect(numbers == (0..<50).map { $0 })
        let audio = try runTool(ffmpeg, ["-v", "error", "-f", "mpegts", "-i", "pipe:0", "-map", "0:a", "-f", "s16le", "-ac", "2", "-ar", "44100", "pipe:1"], input: bytes)
        // All but the encoder's last block (held back at the end), and the tone intact.
        #expect(audio.count / 4 >= 88_200 - 2 * 1_024 && audio.count / 4 <= 88_200 + 1_024, "\(audio.count / 4) frames")
        #expect(correlationWithTone(leftChannel(audio)) > 0.99)
    }

    @Test func theDefaultBitRateFollowsThePictureSize() throws {
        let hd = try VideoFrameFormat(encoding: .i420, width: 1280, height: 720, frameRateNumerator: 30)
        #expect(LiveVideoStream.defaultBitRate(for: hd) == 2_211_840)
    }
}

/// The MP4 container, as Cast receivers get it: FFmpeg reads the initialization segment and
/// every fragment, from the first fetch and from one that joins later.
@Suite(.timeLimit(.minutes(1))) struct FragmentedMP4Tests {
    func numbers(_ bytes: [UInt8], _ format: VideoFrameFormat) throws -> [Int?] {
        let ffmpeg = try requireTool("/usr/bin/ffmpeg")
        let gray = try runTool(ffmpeg, ["-v", "error", "-f", "mp4", "-i", "pipe:0", "-map", "0:v", "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "gray", "pipe:1"], input: bytes)
        let size = format.width * format.height
        return stride(from: 0, to: gray.count - size + 1, by: size).map {
            VideoTestPattern.number(inGray: Array(gray[$0..<$0 + size]), width: format.width, height: format.height)
        }
    }

    func read(_ response: HTTPServerResponse) -> [UInt8] {
        guard case .live(let body, _) = response.body else { return [] }
        var bytes: [UInt8] = []
        while case .bytes(let chunk) = body.read(maximum: 1 << 20) { bytes += chunk }
        return bytes
    }

    @Test func eachFetchIsAWholeMP4FromItsInitializationSegment() throws {
        let format = try VideoFrameFormat(encoding: .i420, width: 160, height: 90, frameRateNumerator: 30)
        let stream = try LiveVideoStream(format: format, container: .fragmentedMP4, settings: LiveVideoSettings(bitRate: 300_000, intraPeriod: .seconds(5)))
        #expect(stream.mimeType == "video/mp4")
        let first = stream.response(to: HTTPServerRequest(method: "GET", path: "/video.mp4", headers: [:], body: []))
        for number in 0..<20 {
            #expect(stream.receive(VideoFrame(format: format, presentationTime: .milliseconds(1000 + number * 33), data: VideoTestPattern.frame(number, format: format))))
        }
        let later = stream.response(to: HTTPServerRequest(method: "GET", path: "/video.mp4", headers: [:], body: []))
        for number in 20..<30 {
            #expect(stream.receive(VideoFrame(format: format, presentationTime: .milliseconds(1000 + number * 33), data: VideoTestPattern.frame(number, format: format))))
        }
        stream.finish()
        let whole = read(first)
        #expect(Array(whole[4..<8]) == Array("ftyp".utf8))
        #expect(try numbers(whole, format) == (0..<30).map { $0 })
        // The later fetch: the initialization segment, then from the IDR made for it.
        #expect(try numbers(read(later), format) == (20..<30).map { $0 })
    }

    /// The route's audio as the MP4's second track: FFmpeg reads H.264 and AAC, the pictures in
    /// order and the tone whole, from the first fetch and from one that joins later.
    @Test func theRoutesAudioIsASecondTrack() throws {
        let ffmpeg = try requireTool("/usr/bin/ffmpeg")
        let ffprobe = try requireTool("/usr/bin/ffprobe")
        let format = try VideoFrameFormat(encoding: .i420, width: 160, height: 90, frameRateNumerator: 25)
        let stream = try LiveVideoStream(
            format: format, container: .fragmentedMP4, settings: LiveVideoSettings(bitRate: 300_000, intraPeriod: .seconds(5)), audio: .cdAudio)
        #expect(stream.carriesAudio)
        let first = stream.response(to: HTTPServerRequest(method: "GET", path: "/video.mp4", headers: [:], body: []))
        let origin = Duration.seconds(5000)
        let pcm = tone(seconds: 2)
        var later: HTTPServerResponse? = nil
        for tick in 0..<20 {
            if tick == 10 { later = stream.response(to: HTTPServerRequest(method: "GET", path: "/video.mp4", headers: [:], body: [])) }
            for number in (tick * 5 / 2)..<((tick + 1) * 5 / 2) {
                #expect(stream.receive(VideoFrame(format: format, presentationTime: origin + .milliseconds(number * 40), data: VideoTestPattern.frame(number, format: format))))
            }
            let batch = Array(pcm[(tick * 4_410 * 4)..<((tick + 1) * 4_410 * 4)])
            stream.receiveAudio(SampleBuffer(format: .cdAudio, presentationTime: origin + .milliseconds(tick * 100), frameCount: 4_410, data: batch))
        }
        stream.finish()
        let whole = read(first)
        let report = String(decoding: try runTool(
            ffprobe, ["-v", "error", "-f", "mp4", "-show_entries", "stream=codec_name,sample_rate,start_time", "-of", "compact", "pipe:0"], input: whole), as: UTF8.self)
        #expect(report.contains("codec_name=h264") && report.contains("codec_name=aac") && report.contains("sample_rate=44100"), "\(report)")
        #expect(try numbers(whole, format) == (0..<50).map { $0 })
        let audio = try runTool(ffmpeg, ["-v", "error", "-f", "mp4", "-i", "pipe:0", "-map", "0:a", "-f", "s16le", "-ac", "2", "-ar", "44100", "pipe:1"], input: whole)
        #expect(audio.count / 4 >= 88_200 - 2 * 1_024, "\(audio.count / 4) frames")
        #expect(correlationWithTone(leftChannel(audio)) > 0.99)
        // The later fetch: from the IDR made for it, both tracks.
        let joined = read(try #require(later))
        let joinedNumbers = try numbers(joined, format)
        #expect(joinedNumbers == (25..<50).map { $0 }, "\(joinedNumbers)")
        let joinedAudio = try runTool(ffmpeg, ["-v", "error", "-f", "mp4", "-i", "pipe:0", "-map", "0:a", "-f", "s16le", "pipe:1"], input: joined)
        #expect(joinedAudio.count / 4 > 30_000, "\(joinedAudio.count / 4) frames after joining")
    }

    @Test func ffprobeReadsTheStreamsCodecSizeAndRate() throws {
        let ffprobe = try requireTool("/usr/bin/ffprobe")
        let format = try VideoFrameFormat(encoding: .i420, width: 320, height: 180, frameRateNumerator: 25)
        let stream = try LiveVideoStream(format: format, container: .fragmentedMP4)
        let response = stream.response(to: HTTPServerRequest(method: "GET", path: "/video.mp4", headers: [:], body: []))
        for number in 0..<25 {
            _ = stream.receive(VideoFrame(format: format, presentationTime: .milliseconds(number * 40), data: VideoTestPattern.frame(number, format: format)))
        }
        stream.finish()
        let report = String(decoding: try runTool(
            ffprobe, ["-v", "error", "-f", "mp4", "-show_entries", "stream=codec_name,width,height,r_frame_rate,profile", "-of", "compact", "pipe:0"],
            input: read(response)), as: UTF8.self)
        #expect(report.contains("codec_name=h264"), "\(report)")
        #expect(report.contains("width=320") && report.contains("height=180"), "\(report)")
        #expect(report.contains("r_frame_rate=25/1"), "\(report)")
    }
}
