import Foundation
#if canImport(Glibc)
import Glibc
#endif
import IOReactor
import MediaDevice
import MediaRouteTestSupport
import MediaRouteTesting
import RealtimeAudio
import RoutingModel
import Testing

/// A delivery reading one end of a socket pair, recording what it hands over.
final class DeliveryRig: Sendable {
    let writer: Int32
    let delivery: PacedAudioDelivery
    let handed = Locked<[UInt8]>([])
    /// Each buffer handed over: its frames and presentation time.
    let buffers = Locked<[(frames: Int, time: Duration)]>([])
    let ends = Locked<[PacedAudioDelivery.End]>([])
    let reader: Int32

    init(
        format: SampleBuffer.Format = .cdAudio, scheduler: any IOScheduler = IOReactor.shared,
        configuration: PacedAudioDelivery.Configuration = PacedAudioDelivery.Configuration(),
        deviceTakes: @escaping @Sendable () -> Bool = { true }
    ) throws {
        (reader, writer) = try PacedAudioDelivery.socketPair(
            sendBuffer: PacedAudioDelivery.sendBufferBytes(for: format, configuration: configuration))
        let handed = self.handed
        let buffers = self.buffers
        let recordedEnds = self.ends
        delivery = try PacedAudioDelivery(
            reading: reader, format: format, routeLatency: .milliseconds(50), reactor: scheduler, configuration: configuration,
            deliver: { buffer in
                guard deviceTakes() else { return false }
                handed.withLock { $0 += buffer.data }
                buffers.withLock { $0.append((buffer.frameCount, buffer.presentationTime)) }
                return true
            },
            ended: { end in recordedEnds.withLock { $0.append(end) } })
        try delivery.start()
    }

    /// Writes all of `bytes` in pieces of `piece` bytes, blocking while the socket is full.
    func write(_ bytes: [UInt8], piece: Int) {
        var offset = 0
        while offset < bytes.count {
            let count = min(piece, bytes.count - offset)
            let sent = bytes.withUnsafeBytes { Glibc.send(writer, $0.baseAddress! + offset, count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { return }
            offset += sent
        }
    }

    func closeWriter() { close(writer) }

    /// Bytes the writer sent that wait in the socket for delivery to read.
    var queuedBytes: Int {
        var count: Int32 = 0
        return ioctl(reader, UInt(FIONREAD), &count) == 0 ? Int(count) : 0
    }

    /// Writes `bytes` on a thread of its own (it blocks while the socket is full); the task
    /// ends when all is written or the reader's end closed.
    func writeOnThread(_ bytes: [UInt8], piece: Int) -> Task<Void, Never> {
        Task {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                Thread {
                    self.write(bytes, piece: piece)
                    done.resume()
                }.start()
            }
        }
    }

    /// Ends a rig whose writer may still be blocked: the delivery stops first (its end closes,
    /// so the writer's send fails and its thread returns), then the writer's descriptor closes.
    /// Closing it under a writer still sending would let that thread write into whatever
    /// socket reuses the number next — another test's.
    func finish(_ writing: Task<Void, Never>) async {
        delivery.stop()
        await writing.value
        closeWriter()
    }
}

@Suite(.timeLimit(.minutes(1))) struct PacedAudioDeliveryTests {
    /// On a manual scheduler the device's clock is the test's: each 20 ms tick hands over
    /// exactly 882 frames at 44.1 kHz, stamped 20 ms apart, and a tick the writer did not
    /// cover is one underrun of silence, to the frame.
    @Test func onAManualSchedulerEachTickHandsOverOnePeriodToTheFrame() async throws {
        let scheduler = ManualIOScheduler(monotonic: .seconds(500))
        let rig = try DeliveryRig(scheduler: scheduler)
        // Three periods, written on a thread of their own: the writer blocks until the device's
        // clock, which only this test moves, takes what the delivery read ahead.
        Thread.detachNewThread { rig.write(rampFrames(882 * 3), piece: 4_096) }
        // The delivery reads on the process's reactor until it holds a period and what it reads
        // ahead (1 323 frames); a full buffer starts the clock at once. Each tick then makes room
        // for one more period, which is read before the next tick.
        for tick in 0...4 {
            let received = UInt64(min(882 * 3, 882 * tick + 1_323))
            #expect(await eventually { rig.delivery.statistics.framesReceived == received && scheduler.pendingTimers == 1 }, "before tick \(tick)")
            scheduler.advance(by: .milliseconds(20))
        }
        let statistics = rig.delivery.statistics
        let buffers = rig.buffers.value
        #expect(buffers.map(\.frames).reduce(0, +) == Int(statistics.framesDelivered))
        #expect(buffers.allSatisfy { $0.frames == 882 }, "\(buffers.map(\.frames))")
        #expect(zip(buffers, buffers.dropFirst()).allSatisfy { $1.time - $0.time == .milliseconds(20) }, "\(buffers.map(\.time))")
        #expect(buffers.count == 5 && statistics.framesReceived == 882 * 3, "\(statistics)")
        #expect(statistics.underruns == 2 && statistics.silenceFrames == 882 * 2, "the two ticks after the writer stopped: \(statistics)")
        rig.closeWriter()
        rig.delivery.stop()
    }

    /// A writer slower than the buffer: the clock starts a period after its first bytes, and
    /// the presentation times count from then (they stayed at zero before, a bug that put
    /// such a stream's samples far in the past).
    @Test func aClockStartedByItsTimerStampsFromThatStart() async throws {
        let scheduler = ManualIOScheduler(monotonic: .seconds(500))
        let rig = try DeliveryRig(scheduler: scheduler)
        rig.write(rampFrames(500), piece: 4_096)  // less than the 1 323 frames that start the clock at once
        #expect(await eventually { rig.delivery.statistics.framesReceived == 500 && scheduler.pendingTimers == 1 })
        scheduler.advance(by: .milliseconds(20))  // the clock starts (and its first tick hands nothing yet)
        scheduler.advance(by: .milliseconds(20))
        let first = try #require(rig.buffers.value.first)
        #expect(first.time >= .seconds(500) && first.time <= .seconds(500) + .milliseconds(40), "\(first.time)")
        rig.closeWriter()
        rig.delivery.stop()
    }

    /// Batched delivery (a URL device's live stream): a tick every 60 ms hands over 60 ms, and
    /// nothing is read between ticks while a period is buffered, however much the writer has
    /// queued: one wake-up per period. (A tick that leaves less than a period — the writer, held
    /// up on a loaded box, had not refilled its socket — reads as it writes until a period is
    /// here, so a writer of small pieces is not starved.)
    @Test func batchedDeliveryReadsOnlyOnItsTicks() async throws {
        let scheduler = ManualIOScheduler(monotonic: .seconds(500))
        let configuration = PacedAudioDelivery.Configuration.batched(period: .milliseconds(60))
        #expect(configuration.readsOnTicks && configuration.period == .milliseconds(60))
        #expect(PacedAudioDelivery.Configuration.batched(period: .milliseconds(5)) == PacedAudioDelivery.Configuration(), "never shorter than the default")
        // The writer's socket holds a period and what is read ahead, 70 ms of CD audio: half of
        // it is asked for, as Linux doubles it.
        #expect(PacedAudioDelivery.sendBufferBytes(for: .cdAudio, configuration: configuration) == 3_087 * 2)
        let rig = try DeliveryRig(scheduler: scheduler, configuration: configuration)
        let source = rampFrames(2_646 * 6)
        let writing = rig.writeOnThread(source, piece: 4_096)
        // Read until the buffer holds 70 ms (3 087 frames): the clock starts.
        #expect(await eventually { rig.delivery.statistics.framesReceived == 3_087 && scheduler.pendingTimers == 1 })
        for _ in 0..<4 {
            let statistics = rig.delivery.statistics
            let before = statistics.framesReceived
            let held = before - statistics.framesDelivered  // what the last tick left buffered
            // The writer refills its socket at once; a delivery reading as bytes come would take them.
            try await Task.sleep(for: .milliseconds(50))
            if held >= 2_646 { #expect(rig.delivery.statistics.framesReceived == before, "read between ticks with \(held) frames buffered") }
            scheduler.advance(by: .milliseconds(60))
            #expect(rig.delivery.statistics.framesReceived > before, "read on the tick")
        }
        let buffers = rig.buffers.value
        #expect(buffers.allSatisfy { $0.frames == 2_646 }, "\(buffers.map(\.frames))")
        #expect(zip(buffers, buffers.dropFirst()).allSatisfy { $1.time - $0.time == .milliseconds(60) }, "\(buffers.map(\.time))")
        #expect(rig.delivery.statistics.underruns == 0)
        let (audio, _) = withoutSilence(rig.handed.value)
        #expect(sameBytes(audio, Array(source.prefix(audio.count))), "in order, none lost")
        await rig.finish(writing)
    }

    /// A tick that comes late (the daemon held up) owes more than the buffer holds: what the
    /// writer already sent waits in the socket and is read then, not played as silence (it was:
    /// silence on a loaded box while the socket filled, and the writer then dropped audio).
    @Test func aLateTickReadsWhatTheWriterAlreadySent() async throws {
        let scheduler = ManualIOScheduler(monotonic: .seconds(500))
        let rig = try DeliveryRig(scheduler: scheduler)
        let source = rampFrames(882 * 10)
        let writing = rig.writeOnThread(source, piece: 4_096)
        #expect(await eventually { rig.delivery.statistics.framesReceived == 1_323 && scheduler.pendingTimers == 1 })
        // The writer fills its socket behind the buffer (a fixed sleep for it was too short with
        // both cores busy): full once what waits there stops growing.
        #expect(await eventually {
            let before = rig.queuedBytes
            try? await Task.sleep(for: .milliseconds(30))
            return before > 0 && rig.queuedBytes == before
        })
        let queued = rig.queuedBytes
        scheduler.advance(by: .milliseconds(60))  // one tick, three periods late
        let statistics = rig.delivery.statistics
        #expect(statistics.framesDelivered == 882 * 3, "\(statistics)")
        // What the writer had sent — the buffer and its socket — is read and played, not
        // replaced by silence, up to the three periods the tick owes; only what it had not sent
        // yet may be silence. (The socket usually holds less than the 1 323 frames owed beyond
        // the buffer; how much its queue takes varies with the kernel's accounting of each
        // write — once 1 733 frames, more than owed, and the tick was all audio.)
        let sent = min(882 * 3, 1_323 + queued / 4)
        let (audio, _) = withoutSilence(rig.handed.value)
        #expect(audio.count / 4 >= sent, "\(audio.count / 4) frames of audio, \(queued) bytes were queued; \(statistics)")
        #expect(Int(statistics.silenceFrames) <= 882 * 3 - sent, "\(statistics)")
        #expect(sameBytes(audio, Array(source.prefix(audio.count))), "in order, none lost")
        await rig.finish(writing)
    }

    @Test func writesCutAnywhereArriveWholeAndInOrder() async throws {
        let rig = try DeliveryRig()
        let source = rampFrames(8_820)  // 0.2 s
        await Task.detached { rig.write(source, piece: 1_001) }.value  // pieces end inside frames and samples
        rig.closeWriter()
        #expect(await eventually { rig.ends.value == [.writerClosed] })
        let statistics = rig.delivery.statistics
        #expect(statistics.active == false)
        #expect(statistics.framesReceived == 8_820)
        let (audio, silent) = withoutSilence(rig.handed.value)
        #expect(sameBytes(audio, source), "every frame, once, in order (\(audio.count) of \(source.count) bytes)")
        #expect(UInt64(silent) == statistics.silenceFrames)
        #expect(statistics.framesDelivered == 8_820 + statistics.silenceFrames)
        #expect(statistics.partialFrameBytes == 0)
    }

    @Test func aWriterFasterThanTheDeviceIsHeldBack() async throws {
        let rig = try DeliveryRig()
        _ = fcntl(rig.writer, F_SETFL, fcntl(rig.writer, F_GETFL) | O_NONBLOCK)
        // Push as much as the socket takes without waiting: it must stop far short of 1 MB.
        let chunk = [UInt8](repeating: 1, count: 4096)
        var accepted = 0
        while accepted < 1 << 20 {
            let sent = chunk.withUnsafeBytes { Glibc.send(rig.writer, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent > 0 { accepted += sent; continue }
            if errno == EAGAIN {
                // The delivery reads ahead once; after that only the device's clock makes room.
                try await Task.sleep(for: .milliseconds(5))
                let retry = chunk.withUnsafeBytes { Glibc.send(rig.writer, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
                if retry > 0 { accepted += retry; continue }
                break
            }
            break
        }
        #expect(accepted < 64 * 1024, "the writer is held back at \(accepted) bytes")
        let delivered = rig.delivery.statistics.framesDelivered
        #expect(delivered < 44_100 / 2, "delivery runs at the device's pace, not the writer's")
        rig.delivery.stop()
        close(rig.writer)
    }

    @Test func aLateWriterGetsSilenceCountedAsUnderruns() async throws {
        let rig = try DeliveryRig()
        let piece = rampFrames(441)  // 10 ms every 40 ms
        for _ in 0..<5 {
            rig.write(piece, piece: piece.count)
            try await Task.sleep(for: .milliseconds(40))
        }
        rig.closeWriter()
        #expect(await eventually { rig.ends.value == [.writerClosed] })
        let statistics = rig.delivery.statistics
        #expect(statistics.underruns >= 3)
        #expect(statistics.silenceFrames > 441)
        #expect(statistics.framesReceived == 5 * 441)
        let (audio, silent) = withoutSilence(rig.handed.value)
        #expect(sameBytes(audio, Array([[UInt8]](repeating: piece, count: 5).joined())), "\(audio.count) bytes")
        #expect(UInt64(silent) == statistics.silenceFrames)
    }

    @Test func halfAFrameAtTheEndIsCountedNotPlayed() async throws {
        let rig = try DeliveryRig()
        rig.write(rampFrames(3) + [0x7F], piece: 13)
        rig.closeWriter()
        #expect(await eventually { rig.ends.value == [.writerClosed] })
        let statistics = rig.delivery.statistics
        #expect(statistics.framesReceived == 3)
        #expect(statistics.partialFrameBytes == 1)
        #expect(withoutSilence(rig.handed.value).audio == rampFrames(3))
    }

    @Test func aStuckDeviceCostsDroppedFramesNotAStalledReader() async throws {
        let rig = try DeliveryRig(deviceTakes: { false })
        await Task.detached { rig.write(rampFrames(4_410), piece: 4_096) }.value
        rig.closeWriter()
        #expect(await eventually { rig.ends.value == [.writerClosed] })
        let statistics = rig.delivery.statistics
        #expect(statistics.framesDelivered == 0)
        #expect(statistics.framesDropped >= 4_410)
        #expect(rig.handed.value.isEmpty)
    }

    @Test func stopClosesTheReaderAndTheWriterSeesIt() async throws {
        let rig = try DeliveryRig()
        rig.write(rampFrames(441), piece: 1_764)
        #expect(await eventually { rig.delivery.statistics.framesReceived == 441 })
        rig.delivery.stop()
        let probe: [UInt8] = [1, 2, 3, 4]
        #expect(await eventually {
            probe.withUnsafeBytes { Glibc.send(rig.writer, $0.baseAddress!, 4, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) } < 0 && errno == EPIPE
        })
        #expect(rig.ends.value.isEmpty, "a stop is not the writer's end")
        #expect(rig.delivery.statistics.active == false)
        close(rig.writer)
    }

    @Test func latencyCountsTheRouteAndWhatIsBuffered() async throws {
        let rig = try DeliveryRig()
        rig.write(rampFrames(441), piece: 1_764)
        #expect(await eventually { rig.delivery.statistics.framesReceived == 441 })
        let latency = rig.delivery.statistics.latencyMicroseconds
        #expect(latency >= 60_000, "route 50 ms + one period at least: \(latency)")
        #expect(latency < 120_000, "\(latency)")
        rig.delivery.stop()
        close(rig.writer)
    }
}
