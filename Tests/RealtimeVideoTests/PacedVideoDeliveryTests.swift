import Foundation
import MediaDevice
import MediaRouteTestSupport
import RealtimeVideo
import RoutingModel
import Synchronization
import Testing

/// The delivery's thread on a real socket: whole pictures in, one per period out, the counts.
@Suite(.timeLimit(.minutes(1))) struct PacedVideoDeliveryTests {
    final class Recording: RealtimeVideoReceiver {
        let pictures = Mutex<[(number: Int?, isRepeat: Bool)]>([])
        let finished = Mutex(false)
        let format: VideoFrameFormat
        init(format: VideoFrameFormat) { self.format = format }
        func receive(_ frame: VideoFrame) -> Bool {
            let number = VideoTestPattern.number(inGray: Array(frame.data.prefix(format.width * format.height)), width: format.width, height: format.height)
            pictures.withLock { $0.append((number, frame.isRepeat)) }
            return true
        }
        func finish() { finished.withLock { $0 = true } }
        var codec: String { "recording" }
        var bitrate: Int { 0 }
    }

    let format = try! VideoFrameFormat(encoding: .i420, width: 64, height: 36, frameRateNumerator: 25)

    func start(_ receiver: Recording) throws -> (PacedVideoDelivery, Int32, Task<RealtimeVideoStatistics, Never>) {
        let (reader, writer) = try PacedVideoDelivery.socketPair(for: format)
        let (ended, continuation) = AsyncStream.makeStream(of: RealtimeVideoStatistics.self)
        let delivery = try PacedVideoDelivery(reading: reader, format: format, receiver: receiver, now: SampleBuffer.clockNow) { statistics in
            continuation.yield(statistics)
            continuation.finish()
        }
        try delivery.start()
        let final = Task { () -> RealtimeVideoStatistics in
            for await statistics in ended { return statistics }
            return RealtimeVideoStatistics(format: format, active: true)
        }
        return (delivery, writer, final)
    }

    @Test func aWriterFasterThanTheRateHasPicturesDroppedTheNewestShownInOrder() async throws {
        let receiver = Recording(format: format)
        let (_, writer, final) = try start(receiver)
        // 60 pictures as fast as the socket takes them: far faster than 25 a second.
        #expect(await writePicturesOnOwnThread(0..<60, format: format, to: writer, period: .zero).value != nil)
        let statistics = await final.value
        let numbers = receiver.pictures.withLock { $0.compactMap(\.number) }
        #expect(statistics.framesReceived == 60)
        #expect(statistics.framesDropped > 0)
        #expect(statistics.framesSent + statistics.framesDropped == 60 + statistics.framesRepeated)
        #expect(numbers == numbers.sorted() && numbers.last == 59, "the last picture is shown at the end: \(numbers.suffix(5))")
        #expect(receiver.finished.withLock { $0 })
        #expect(statistics.active == false)
    }

    @Test func aWriterSlowerThanTheRateHasItsLastPictureRepeated() async throws {
        let receiver = Recording(format: format)
        let (_, writer, final) = try start(receiver)
        // 4 pictures 200 ms apart at 25 a second: about four repeats after each.
        #expect(await writePicturesOnOwnThread(0..<4, format: format, to: writer, period: .milliseconds(200)).value != nil)
        let statistics = await final.value
        let pictures = receiver.pictures.withLock { $0 }
        #expect(statistics.framesReceived == 4 && statistics.framesDropped == 0)
        #expect(statistics.framesRepeated >= 3, "\(statistics)")
        #expect(pictures.filter(\.isRepeat).count == Int(statistics.framesRepeated))
        #expect(Set(pictures.compactMap(\.number)) == [0, 1, 2, 3])
    }

    @Test func stoppingEndsTheThreadAndClosesTheWritersSocket() async throws {
        let receiver = Recording(format: format)
        let (delivery, writer, final) = try start(receiver)
        #expect(await writePicturesOnOwnThread(0..<2, format: format, to: dup(writer), period: .zero).value != nil)
        delivery.stop()
        let statistics = await final.value
        #expect(statistics.active == false)
        // The read end is closed: a send fails (EPIPE, without SIGPIPE).
        var byte: UInt8 = 1
        #expect(send(writer, &byte, 1, Int32(MSG_NOSIGNAL)) == -1)
        close(writer)
        delivery.stop()  // again, after the end: nothing happens
    }

    @Test func aPartialPictureAtTheEndIsNotShown() async throws {
        let receiver = Recording(format: format)
        let (_, writer, final) = try start(receiver)
        let picture = VideoTestPattern.frame(7, format: format)
        #expect(writeBlocking(picture + Array(picture.prefix(100)), to: writer, piece: 4096))
        close(writer)
        let statistics = await final.value
        #expect(statistics.framesReceived == 1)
        #expect(receiver.pictures.withLock { $0.compactMap(\.number) } == [7])
    }

    /// The app's H.264 (x264 streams from the fuzz seeds): access units in order, one per period.
    final class AccessUnitRecording: RealtimeVideoReceiver {
        let units = Mutex<[(bytes: [UInt8], time: Duration)]>([])
        func receive(_ frame: VideoFrame) -> Bool {
            units.withLock { $0.append((frame.data, frame.presentationTime)) }
            return true
        }
        func finish() {}
        var codec: String { "recording" }
        var bitrate: Int { 0 }
    }

    /// A started delivery of `format` into a recording, the writer's end, and its final counts.
    func startRecording(_ format: VideoFrameFormat) throws -> (AccessUnitRecording, PacedVideoDelivery, Int32, AsyncStream<RealtimeVideoStatistics>) {
        let receiver = AccessUnitRecording()
        let (reader, writer) = try PacedVideoDelivery.socketPair(for: format)
        let (ended, continuation) = AsyncStream.makeStream(of: RealtimeVideoStatistics.self)
        let delivery = try PacedVideoDelivery(reading: reader, format: format, receiver: receiver, now: SampleBuffer.clockNow) { statistics in
            continuation.yield(statistics)
            continuation.finish()
        }
        try delivery.start()
        return (receiver, delivery, writer, ended)
    }

    func deliver(_ bytes: [UInt8], as format: VideoFrameFormat) async throws -> (RealtimeVideoStatistics, [(bytes: [UInt8], time: Duration)]) {
        let (receiver, _, writer, ended) = try startRecording(format)
        // The writer may be refused before it is done: what it could not write is not waited for.
        _ = writeBlocking(bytes, to: writer, piece: 500)
        close(writer)
        var final: RealtimeVideoStatistics? = nil
        for await statistics in ended { final = statistics }
        return (try #require(final), receiver.units.withLock { $0 })
    }

    func h264(width: Int, height: Int) throws -> VideoFrameFormat {
        try VideoFrameFormat(encoding: .h264, width: width, height: height, frameRateNumerator: 25)
    }

    @Test func theAppsH264IsSentOneAccessUnitPerPeriodInTheOrderWritten() async throws {
        let stream = try H264AccessUnitSplitterTests.seed("x264-baseline-32x32-3")
        let (statistics, units) = try await deliver(stream, as: try h264(width: 32, height: 32))
        #expect(units.map(\.bytes) == (try H264AccessUnitSplitterTests.split(stream)).map(\.bytes))
        #expect(units.count == 3 && units[1].time - units[0].time == .milliseconds(40) && units[2].time - units[1].time == .milliseconds(40))
        #expect(statistics.framesReceived == 3 && statistics.framesSent == 3 && statistics.framesDropped == 0 && statistics.failure == nil)
    }

    @Test func aWriterBehindItsRateHasItsPicturesShownAsTheyCome() async throws {
        let units = try H264AccessUnitSplitterTests.split(try H264AccessUnitSplitterTests.seed("x264-baseline-32x32-3"))
        let format = try h264(width: 32, height: 32)
        let (receiver, delivery, writer, ended) = try startRecording(format)
        // 200 ms apart at 25 a second: each picture is five periods late, none is repeated.
        for unit in units {
            #expect(writeBlocking(unit.bytes, to: writer, piece: 4096))
            try await Task.sleep(for: .milliseconds(200))
        }
        close(writer)
        for await _ in ended {}
        let times = receiver.units.withLock { $0.map(\.time) }
        #expect(times.count == 3)
        let gaps = zip(times.dropFirst(), times).map { $0 - $1 }
        #expect(gaps.allSatisfy { $0 >= .milliseconds(150) }, "\(gaps)")
        #expect(delivery.statistics.framesRepeated == 0 && delivery.statistics.framesSent == 3)
    }

    @Test func picturesBeforeTheFirstIDRAreDroppedAndCounted() async throws {
        let whole = try H264AccessUnitSplitterTests.split(try H264AccessUnitSplitterTests.seed("x264-baseline-32x32-3"))
        // The P picture, then the IDR (with its parameter sets again: x264 repeats them at each IDR).
        let (statistics, units) = try await deliver(whole[1].bytes + whole[2].bytes, as: try h264(width: 32, height: 32))
        #expect(units.map(\.bytes) == [whole[2].bytes])
        #expect(statistics.framesReceived == 2 && statistics.framesDropped == 1 && statistics.framesSent == 1)
    }

    @Test func h264OfAnotherSizeOrNotH264AtAllEndsTheVideoWithTheReason() async throws {
        let stream = try H264AccessUnitSplitterTests.seed("x264-baseline-32x32-3")
        let (mismatch, sent) = try await deliver(stream, as: try h264(width: 64, height: 36))
        #expect(sent.isEmpty)
        #expect(mismatch.failure == "the H.264 stream's pictures are 32x32, not 64x36 as acquired")
        let (rawPictures, none) = try await deliver(VideoTestPattern.frame(1, format: format), as: try h264(width: 64, height: 36))
        #expect(none.isEmpty && rawPictures.failure == H264StreamError.notAnnexB.description)
        let (bFrames, _) = try await deliver(try H264AccessUnitSplitterTests.seed("x264-bframes-32x32"), as: try h264(width: 32, height: 32))
        #expect(bFrames.failure == H264StreamError.bidirectionalSlices.description)
    }
}
