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
}
