import Foundation
import HTTPServing
import LiveStreaming
import MediaRouteTestSupport
import RoutingModel
import Synchronization
import Testing

/// A route's audio as an HTTP live stream, fetched over loopback from the real server.
@Suite(.timeLimit(.minutes(1))) struct LiveAudioStreamTests {
    func buffer(_ format: SampleBuffer.Format, _ data: [UInt8], at time: Duration = .seconds(10)) -> SampleBuffer {
        SampleBuffer(format: format, presentationTime: time, frameCount: data.count / (format.bytesPerFrame ?? 1), data: data)
    }

    /// A clock stopped at `time` (the presentation times' clock, as the test sets it).
    func stopped(at time: Duration) -> @Sendable () -> Duration { { time } }

    /// A server answering every request with `stream`, and its port.
    func serving(_ stream: LiveAudioStream) async throws -> HTTPServer {
        try await HTTPServer(host: "127.0.0.1") { request in stream.response(to: request) }
    }

    @Test func wavIsAHeaderThenTheSamplesLittleEndianEndingAtTheClose() async throws {
        let format = SampleBuffer.Format(encoding: .pcmS16LE, sampleRate: 44_100, channels: 2)
        // Half a second of priming reaches back past the first buffer: the fetch gets all of it.
        let stream = LiveAudioStream(encoding: .wav, sampleRate: 44_100, channels: 2, now: stopped(at: .seconds(10) + .milliseconds(300)))
        let server = try await serving(stream)
        defer { Task { await server.close() } }
        let pcm = (0..<4_000).map { UInt8($0 % 251) }
        stream.append(buffer(format, pcm))
        async let answer = RawHTTP.stream(port: Int(server.port), "GET /live HTTP/1.1\r\nHost: x\r\n\r\n", bodyBytes: 44 + 8_000 + 1)
        try await Task.sleep(for: .milliseconds(200))
        stream.append(buffer(format, Array(pcm.reversed()), at: .seconds(10) + .microseconds(22_676)))
        stream.finish()
        let response = try await answer
        #expect(response.statusLine == "HTTP/1.0 200 OK")
        #expect(response.headers["content-type"] == "audio/wav")
        #expect(response.headers["content-length"] == nil)
        #expect(response.headers["transfer-encoding"] == nil)
        #expect(response.closedByServer)
        // RIFF/WAVE, PCM, 2 channels, 44 100 Hz, 16 bits; sizes say "unbounded".
        let header = Array(response.body.prefix(44))
        let riff = Array(header[0..<4]) == Array("RIFF".utf8) && Array(header[8..<16]) == Array("WAVEfmt ".utf8)
        #expect(riff)
        #expect(header[22] == 2 && UInt32(header[24]) | UInt32(header[25]) << 8 | UInt32(header[26]) << 16 == 44_100 && header[34] == 16)
        #expect(Array(header[36..<40]) == Array("data".utf8) && Array(header[40..<44]) == [0xFF, 0xFF, 0xFF, 0xFF])
        // The first fetch is primed with what came before it, then gets what follows.
        let samplesIntact = Array(response.body.dropFirst(44)) == pcm + pcm.reversed()
        #expect(samplesIntact, "\(response.body.count) bytes")
    }

    @Test func lpcmIsBigEndianAndFloatIsConvertedAndClamped() async throws {
        let format = SampleBuffer.Format(encoding: .pcmF32LE, sampleRate: 48_000, channels: 1)
        let stream = LiveAudioStream(
            encoding: .lpcm, sampleRate: 48_000, channels: 1, extraHeaders: [("transferMode.dlna.org", "Streaming")], now: stopped(at: .seconds(10)))
        let server = try await serving(stream)
        defer { Task { await server.close() } }
        let values: [Float] = [0, 0.5, -0.5, 1, -1, 2, -7, .nan]
        stream.append(buffer(format, values.flatMap { value in withUnsafeBytes(of: value.bitPattern.littleEndian) { Array($0) } }))
        stream.finish()
        let response = try await RawHTTP.stream(port: Int(server.port), "GET /live HTTP/1.1\r\nHost: x\r\n\r\n", bodyBytes: 16)
        #expect(response.headers["content-type"] == "audio/L16;rate=48000;channels=1")
        #expect(response.headers["transfermode.dlna.org"] == "Streaming")
        let samples = stride(from: 0, to: response.body.count, by: 2).map { Int16(bitPattern: UInt16(response.body[$0]) << 8 | UInt16(response.body[$0 + 1])) }
        #expect(samples == [0, 16384, -16384, 32767, -32767, 32767, -32768, 0])
    }

    @Test func aBufferInAnotherFormatIsRefused() {
        let stream = LiveAudioStream(encoding: .wav, sampleRate: 44_100, channels: 2)
        #expect(!stream.append(buffer(SampleBuffer.Format(encoding: .pcmS16LE, sampleRate: 48_000, channels: 2), [0, 0, 0, 0])))
        #expect(stream.append(buffer(.cdAudio, [0, 0, 0, 0])))
        #expect(stream.bytes.statistics.bytesWritten == 4)
    }

    @Test func chunkedAndLengthFramingsAreWhatTheHeadSays() async throws {
        for framing in [HTTPLiveFraming.chunked, .contentLength(1 << 32)] {
            let stream = LiveAudioStream(encoding: .wav, sampleRate: 44_100, channels: 2, configuration: .init(framing: framing))
            let server = try await serving(stream)
            stream.append(buffer(.cdAudio, [UInt8](repeating: 1, count: 400)))
            let response = try await RawHTTP.stream(port: Int(server.port), "GET /live HTTP/1.1\r\nHost: x\r\n\r\n", bodyBytes: 20)
            #expect(response.statusLine == "HTTP/1.1 200 OK")
            switch framing {
            case .chunked: #expect(response.headers["transfer-encoding"] == "chunked")
            default: #expect(response.headers["content-length"] == String(1 << 32))
            }
            stream.finish()
            await server.close()
        }
    }

    /// A renderer that fetches before the app's first samples gets the head at once, so it can
    /// set up its decoder while it waits; the samples follow when they come.
    @Test func aFetchBeforeTheFirstSamplesGetsTheHeadAtOnce() async throws {
        let stream = LiveAudioStream(
            encoding: .lpcm, sampleRate: 44_100, channels: 2, configuration: .init(prime: .zero),
            extraHeaders: [("transferMode.dlna.org", "Streaming")], now: stopped(at: .seconds(10)))
        let server = try await serving(stream)
        defer { Task { await server.close() } }
        // No body byte asked for: the answer returns once its head is in, or fails after a second.
        let early = try await RawHTTP.stream(port: Int(server.port), "GET /live HTTP/1.1\r\nHost: x\r\n\r\n", bodyBytes: 0, timeout: 1)
        #expect(early.statusLine == "HTTP/1.0 200 OK")
        #expect(early.headers["content-type"] == "audio/L16;rate=44100;channels=2")
        #expect(early.headers["transfermode.dlna.org"] == "Streaming")
        #expect(early.body.isEmpty)
        // The samples, when they come, still reach a fetch made before them.
        async let answer = RawHTTP.stream(port: Int(server.port), "GET /live HTTP/1.1\r\nHost: x\r\n\r\n", bodyBytes: 8, timeout: 2)
        try await Task.sleep(for: .milliseconds(200))
        stream.append(buffer(.cdAudio, [1, 2, 3, 4, 5, 6, 7, 8], at: .seconds(10)))
        #expect(try await answer.body == [2, 1, 4, 3, 6, 5, 8, 7])
        stream.finish()
    }

    @Test func aReconnectionWithRangeResumesFromNowAlignedToItsFrames() async throws {
        // Now is a buffer's length after the end of the first buffer (1 000 frames from 10 s): a
        // fetch, led in by the latest hand-over, starts after it.
        let stream = LiveAudioStream(
            encoding: .wav, sampleRate: 44_100, channels: 2, configuration: .init(prime: .zero), now: stopped(at: .seconds(10) + .microseconds(45_352)))
        let server = try await serving(stream)
        defer { Task { await server.close() } }
        stream.append(buffer(.cdAudio, [UInt8](repeating: 1, count: 4_000)))
        async let answer = RawHTTP.stream(
            port: Int(server.port), "GET /live HTTP/1.1\r\nHost: x\r\nRange: bytes=1002-\r\n\r\n", bodyBytes: 2 + 8)
        try await Task.sleep(for: .milliseconds(200))
        stream.append(buffer(.cdAudio, [5, 6, 7, 8, 9, 10, 11, 12], at: .seconds(10) + .microseconds(22_676)))
        let response = try await answer
        #expect(response.statusLine.hasPrefix("HTTP/1.0 206"))
        #expect(response.headers["content-range"]?.hasPrefix("bytes 1002-") == true)
        // Byte 1002 is two bytes into a frame as the client counts (after the 44-byte header):
        // two bytes of lead-in, then whole frames from now; no header, nothing from the past.
        #expect(response.body == [0, 0, 5, 6, 7, 8, 9, 10, 11, 12])
    }

    /// Delivery hands a lone URL device 100 ms at a time. An unprimed fetch 30 ms after the
    /// latest hand-over gets its last 70 ms at once, from the sample due a period ago, instead of
    /// waiting for the next hand-over: the device plays one period after each sample's
    /// presentation time whenever it connects, and a first fetch does not skip the first period.
    @Test func aFetchGetsTheLatestHandOverAtOnce() async throws {
        let stream = LiveAudioStream(
            encoding: .lpcm, sampleRate: 44_100, channels: 2, configuration: .init(prime: .zero), now: stopped(at: .seconds(10) + .milliseconds(130)))
        let server = try await serving(stream)
        defer { Task { await server.close() } }
        stream.append(buffer(.cdAudio, [UInt8](repeating: 3, count: 4_410 * 4), at: .seconds(10)))  // 10.0 s to 10.1 s
        let response = try await RawHTTP.stream(port: Int(server.port), "GET /live HTTP/1.1\r\nHost: x\r\n\r\n", bodyBytes: 3_087 * 4, timeout: 2)
        #expect(response.statusLine.hasPrefix("HTTP/1.0 200"))
        #expect(response.body.count == 3_087 * 4 && response.body.allSatisfy { $0 == 3 }, "70 ms, from 10.03 s")
        stream.finish()
    }

    @Test func aFetchStartsAtTheSampleDueNowLessThePrimeSoAGroupLeadIsKept() async throws {
        // A group member led in by 2 s of silence: its buffers are dated 2 s later than
        // delivery's clock. A fetch at 10.5 s unprimed starts at the sample dated 10.5 s —
        // in the silence, 1.5 s before the first real sample — not at the newest byte.
        let stream = LiveAudioStream(encoding: .lpcm, sampleRate: 44_100, channels: 2, configuration: .init(prime: .zero), now: stopped(at: .seconds(10) + .milliseconds(500)))
        stream.append(buffer(.cdAudio, [UInt8](repeating: 0, count: 2 * 176_400), at: .seconds(10)))
        stream.append(buffer(.cdAudio, [UInt8](repeating: 7, count: 4_000), at: .seconds(12)))
        let reader = stream.bytes.makeReader(playingFrom: .seconds(10) + .milliseconds(500))
        guard case .bytes(let bytes) = reader.read(maximum: 1 << 20) else {
            Issue.record("nothing to read")
            return
        }
        let expected = 264_600 + 4_000
        #expect(bytes.count == expected, "from 10.5 s: 1.5 s of silence, then the samples")
        let samplesLast = bytes.suffix(4_000).allSatisfy { $0 == 7 }
        let silenceFirst = bytes.prefix(264_600).allSatisfy { $0 == 0 }
        #expect(samplesLast && silenceFirst)
        // A time after everything kept starts at the end; one before it at the oldest byte.
        #expect(stream.bytes.makeReader(playingFrom: .seconds(20)).read(maximum: 10) == .empty)
        if case .bytes(let all) = stream.bytes.makeReader(playingFrom: .seconds(1)).read(maximum: 1 << 20) {
            let everything = 352_800 + 4_000
            #expect(all.count == everything)
        } else {
            Issue.record("nothing kept")
        }
    }

    @Test func aFetchStartsAtTheSampleDueWhenItsBodyIsFirstReadNotWhenItsAnswerWasMade() throws {
        // A device keeps the offset it starts with: the server's time between making the answer
        // and reading its body (a task, the head's write: 20 ms in a debug build) must not make
        // it start at an older sample and so play that much later for good.
        let clock = Mutex(Duration.seconds(10) + .milliseconds(500))
        let stream = LiveAudioStream(
            encoding: .lpcm, sampleRate: 44_100, channels: 2, configuration: .init(prime: .zero), now: { clock.withLock { $0 } })
        stream.append(buffer(.cdAudio, [UInt8](repeating: 0, count: 2 * 176_400), at: .seconds(10)))
        stream.append(buffer(.cdAudio, [UInt8](repeating: 7, count: 4_410 * 4), at: .seconds(12)))  // the latest hand-over: 100 ms
        let response = stream.response(to: HTTPServerRequest(method: "GET", path: "/live", headers: [:]))
        guard case .live(let body, _) = response.body else {
            Issue.record("not a live answer: \(response.body)")
            return
        }
        clock.withLock { $0 += .milliseconds(20) }
        guard case .bytes(let bytes) = body.read(maximum: 1 << 20) else {
            Issue.record("nothing to read")
            return
        }
        // From 10.42 s (the read's 10.52 s less the 100 ms hand-over), not 10.40 s.
        let silence = 352_800 - 74_088
        #expect(bytes.count == silence + 17_640, "\(bytes.count) bytes: \(Double(352_800 + 17_640 - bytes.count) / 176.4) ms skipped")
        // A fetch made before the first samples (a renderer prepared ahead) starts at the first
        // byte whenever it comes: started at the sample due at its read it had no margin.
        let early = LiveAudioStream(
            encoding: .lpcm, sampleRate: 44_100, channels: 2, configuration: .init(prime: .zero), now: { clock.withLock { $0 } })
        let ahead = early.response(to: HTTPServerRequest(method: "GET", path: "/live", headers: [:]))
        early.append(buffer(.cdAudio, [UInt8](repeating: 5, count: 4_410 * 4), at: clock.withLock { $0 } - .milliseconds(100)))
        clock.withLock { $0 += .milliseconds(20) }
        if case .live(let aheadBody, _) = ahead.body, case .bytes(let first) = aheadBody.read(maximum: 1 << 20) {
            #expect(first.count == 4_410 * 4, "the whole first hand-over")
        } else {
            Issue.record("nothing to read ahead")
        }
        early.finish()
        // A reconnection's reader given a fixed time keeps it whenever it is read.
        let fixed = stream.bytes.makeReader(playingFrom: .seconds(10) + .milliseconds(400))
        clock.withLock { $0 += .milliseconds(500) }
        if case .bytes(let all) = fixed.read(maximum: 1 << 20) { #expect(all.count == 352_800 - 70_560 + 17_640) } else { Issue.record("nothing to read") }
        stream.finish()
    }

    @Test func aRangeBeyondTheAdvertisedLengthIsRefused() async throws {
        let stream = LiveAudioStream(encoding: .wav, sampleRate: 44_100, channels: 2, configuration: .init(framing: .contentLength(1000)))
        let response = stream.response(to: HTTPServerRequest(method: "GET", path: "/", headers: ["range": "bytes=5000-"], body: []))
        #expect(response.status == 416)
    }

    @Test func encodingsAreChosenByLatencyFromWhatADeviceLists() {
        let lists = ["audio/mpeg", "audio/x-wav", "audio/l16;rate=44100;channels=2"]
        #expect(LiveAudioEncoding.choose(from: lists, sampleRate: 44_100, channels: 2) == .lpcm)
        // L16 listed for another rate or channel count does not take this stream; WAV does.
        #expect(LiveAudioEncoding.choose(from: lists, sampleRate: 48_000, channels: 2) == .wav)
        #expect(LiveAudioEncoding.choose(from: lists, sampleRate: 44_100, channels: 1) == .wav)
        #expect(LiveAudioEncoding.choose(from: ["audio/l16"], sampleRate: 48_000, channels: 1) == .lpcm)
        // MP3 when it is all a device takes; nothing for what MediaRoute does not encode live.
        #expect(LiveAudioEncoding.choose(from: ["audio/mpeg", "video/mp4"], sampleRate: 44_100, channels: 2) == .mp3)
        #expect(LiveAudioEncoding.choose(from: ["audio/mp4", "video/mp4", "audio/ogg"], sampleRate: 44_100, channels: 2) == nil)
        #expect(LiveAudioEncoding.choose(from: lists, sampleRate: 44_100, channels: 2, preference: [.wav, .lpcm]) == .wav)
        #expect(LiveAudioEncoding.lpcm.dlnaProfile(sampleRate: 44_100, channels: 2) == "LPCM")
        #expect(LiveAudioEncoding.lpcm.dlnaProfile(sampleRate: 32_000, channels: 2) == nil)
    }

    /// A live entry is the served-file rules' like a file: an unknown token is 404, another
    /// host (a neighbour spoofing nothing, or guessing) 403, and only the device opens a reader.
    @Test func aLiveEntryAnswersOnlyItsDeviceAndItsToken() {
        let stream = LiveAudioStream(encoding: .wav, sampleRate: 44_100, channels: 2, now: stopped(at: .seconds(10)))
        let files = ServedFiles()
        let token = files.add(ServedFiles.Live(allowedHost: "192.0.2.7") { stream.response(to: $0) })
        let path = ServedFiles.path(token: token, name: "live.wav")
        func status(_ path: String, from host: String, method: String = "GET") -> Int? {
            files.response(to: HTTPServerRequest(method: method, path: path, remoteHost: host))?.status
        }
        #expect(status(path, from: "192.0.2.8") == 403)
        #expect(status(ServedFiles.path(token: ServedFiles.token(), name: "live.wav"), from: "192.0.2.7") == 404)
        #expect(status(path, from: "192.0.2.7", method: "POST") == 405)
        #expect(stream.bytes.statistics.readersOpened == 0, "refused requests open no reader")
        #expect(status(path, from: "192.0.2.7") == 200)
        #expect(stream.bytes.statistics.readersOpened == 1)
        files.remove(token)
        #expect(status(path, from: "192.0.2.7") == 404, "gone with its route")
    }
}

/// The device's clock drift, followed: its position reports make the stream's samples go through
/// the resampler at its rate.
@Suite struct LiveAudioStreamDriftTests {
    final class TestClock: Sendable {
        let nanoseconds = Atomic<Int64>(0)
        var now: Duration { .nanoseconds(nanoseconds.load(ordering: .relaxed)) }
        func advance(_ duration: Duration) { nanoseconds.add(Int64(duration / .nanoseconds(1)), ordering: .relaxed) }
    }

    @Test func aDeviceThatPlaysFasterIsSentMoreSamplesOnceItsRateIsKnown() throws {
        let clock = TestClock()
        let drift = PlayoutRateEstimator.Configuration(minimumSpan: .seconds(10), maximumUncertainty: 20)
        let stream = LiveAudioStream(
            encoding: .lpcm, sampleRate: 44_100, channels: 2, configuration: LiveAudioStream.Configuration(prime: .zero, drift: drift),
            now: { clock.now })
        let format = SampleBuffer.Format(encoding: .pcmS16LE, sampleRate: 44_100, channels: 2)
        let batch = tone(seconds: 0.1)
        let start = clock.now
        var bytesAt: [Int: UInt64] = [:]
        // 60 s in 100 ms batches; the device, +400 ppm, reports its position every second.
        for tick in 0..<600 {
            stream.append(SampleBuffer(format: format, presentationTime: clock.now, frameCount: 4_410, data: batch))
            clock.advance(.milliseconds(100))
            if tick % 10 == 9 {
                let elapsed = (clock.now - start) / .seconds(1)
                let played = elapsed * (1 + 400e-6)
                #expect(stream.devicePlayed((played * 1_000).rounded() / 1_000) == nil)
            }
            bytesAt[tick] = stream.bytes.statistics.bytesWritten
        }
        let status = stream.driftStatus
        let rate = try #require(status.ratePPM)
        #expect(abs(rate - 400) < 20)
        let correction = try #require(status.correctionPPM, "the resampler is engaged")
        #expect(correction > 300 && correction < 900)
        // The last 30 s carried more than 30 s of samples: the device's rate and the trim that
        // brings back what built up before the rate was known.
        let frames = Double(bytesAt[599]! - bytesAt[299]!) / 4
        #expect(frames > 30 * 44_100 * (1 + 300e-6) && frames < 30 * 44_100 * (1 + 1_000e-6), "\(frames) frames in 30 s")
        // And the offset it had built up is going: at most what 60 s at 400 ppm gives.
        let offset = try #require(status.offset)
        #expect(offset < .milliseconds(24) && offset > .milliseconds(-24))
    }

    /// The device's latency from its positions: the stream seconds due by a report's time, less
    /// those it played since the first byte of its newest fetch (a fetch that began at the sample
    /// dated 10.2 s and plays 0.5 s of it at 11.0 s plays 300 ms late); the median of the newest
    /// reports, once there are three; a new fetch or a stop starts the measure again; a device
    /// still at zero is not measured.
    @Test func aDevicesPositionsFromItsFetchMeasureItsLatency() throws {
        let stream = LiveAudioStream(
            encoding: .lpcm, sampleRate: 44_100, channels: 2, configuration: .init(prime: .zero, drift: nil), now: { .seconds(10) })
        stream.append(SampleBuffer(format: .cdAudio, presentationTime: .seconds(10), frameCount: 44_100, data: tone(seconds: 1)))
        let reader = stream.bytes.makeReader(playingFrom: .seconds(10) + .milliseconds(200))
        _ = reader.read(maximum: 1 << 20)
        #expect(stream.bytes.newestReaderStart?.presentationTime == .seconds(10) + .milliseconds(200))
        stream.devicePlayed(0, at: .seconds(11))
        stream.devicePlayed(0.5, at: .seconds(11))
        stream.devicePlayed(0.6, at: .seconds(11) + .milliseconds(100))
        #expect(stream.measuredDeviceLatency == nil, "two reports past zero are no measure yet")
        stream.devicePlayed(0.75, at: .seconds(11) + .milliseconds(200))  // a late status: 250 ms
        stream.devicePlayed(0.7, at: .seconds(11) + .milliseconds(200))
        let measured = try #require(stream.measuredDeviceLatency)
        #expect(abs(measured / .milliseconds(1) - 300) < 0.01, "\(measured)")
        // The device fetched again (from 10.9 s): its positions count from there.
        let again = stream.bytes.makeReader(playingFrom: .seconds(10) + .milliseconds(900))
        _ = again.read(maximum: 1 << 20)
        stream.devicePlayed(0.1, at: .seconds(11) + .milliseconds(300))
        #expect(stream.measuredDeviceLatency == nil)
        stream.devicePlayed(0.2, at: .seconds(11) + .milliseconds(500))
        stream.devicePlayed(0.3, at: .seconds(11) + .milliseconds(600))
        #expect(abs((stream.measuredDeviceLatency ?? .zero) / .milliseconds(1) - 400) < 0.01)
        stream.deviceStopped()
        #expect(stream.measuredDeviceLatency == nil)
        stream.finish()
    }

    @Test func withoutReportsOrWithDriftOffTheSamplesGoThroughUnchanged() {
        let format = SampleBuffer.Format(encoding: .pcmS16LE, sampleRate: 44_100, channels: 2)
        let batch = tone(seconds: 0.1)
        let off = LiveAudioStream(
            encoding: .wav, sampleRate: 44_100, channels: 2, configuration: LiveAudioStream.Configuration(drift: nil), now: { .seconds(1) })
        off.append(SampleBuffer(format: format, presentationTime: .seconds(1), frameCount: 4_410, data: batch))
        #expect(off.devicePlayed(1, at: .seconds(2)) == nil)
        #expect(off.driftStatus == LiveDriftStatus())
        #expect(off.bytes.statistics.bytesWritten == UInt64(batch.count))
    }
}

extension LiveAudioStreamDriftTests {
    /// A device at +400 ppm reporting exact positions for `seconds`, with `trim` ppm of
    /// correction at most; every change of timeline `precision` reported, with its time.
    func timelineChanges(trim: Double, seconds: Int, precision: Duration) -> [(Bool, Int)] {
        let clock = TestClock()
        let drift = PlayoutRateEstimator.Configuration(minimumSpan: .seconds(10), maximumUncertainty: 20, correctionTime: .seconds(5), maximumTrim: trim)
        let stream = LiveAudioStream(
            encoding: .lpcm, sampleRate: 44_100, channels: 2, configuration: LiveAudioStream.Configuration(prime: .zero, drift: drift),
            now: { clock.now })
        let format = SampleBuffer.Format(encoding: .pcmS16LE, sampleRate: 44_100, channels: 2)
        let batch = tone(seconds: 0.1)
        var changes: [(Bool, Int)] = []
        for tick in 0..<(seconds * 10) {
            stream.append(SampleBuffer(format: format, presentationTime: clock.now, frameCount: 4_410, data: batch))
            clock.advance(.milliseconds(100))
            if tick % 10 == 9 {
                stream.devicePlayed(Double(tick + 1) / 10 * (1 + 400e-6))
                if let off = stream.timelineChange(precision: precision) { changes.append((off, tick / 10)) }
            }
        }
        return changes
    }

    @Test func aDeviceTheCorrectionCannotBringBackIsReportedOffItsTimeline() {
        // No trim: the 4-5 ms it drifted before its rate was known stay.
        let stuck = timelineChanges(trim: 0, seconds: 60, precision: .milliseconds(2))
        #expect(stuck.count == 1 && stuck.first?.0 == true, "\(stuck)")
        // Not before the correction had twice its time (10 s) after the rate was known (~11 s).
        #expect((stuck.first?.1 ?? 0) >= 20)
        // With its trim, the same drift is brought back within the precision: nothing to report.
        #expect(timelineChanges(trim: 500, seconds: 60, precision: .milliseconds(2)).isEmpty)
    }
}
