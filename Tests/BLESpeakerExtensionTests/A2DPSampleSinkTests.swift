import BLESpeakerExtension
import BluetoothAudio
import Foundation
import MediaClock
import MediaRouteTestSupport
import RoutingModel
import Synchronization
import Testing
import Transport

/// The A2DP stream on the delivering thread, on bytes: SBC packets on a SEQPACKET socket whose
/// other end the test reads, as bluetoothd's would be.
@Suite(.timeLimit(.minutes(1))) struct A2DPSampleSinkTests {
    final class EventLog: Sendable {
        let events = Mutex<[A2DPSampleSink.Event]>([])
    }

    final class Rig: Sendable {
        let sink: A2DPSampleSink
        let socket: PacketSocket
        let peer: Int32
        let log = EventLog()
        var events: [A2DPSampleSink.Event] { log.events.withLock { $0 } }

        init() throws {
            var ends: [Int32] = [-1, -1]
            #expect(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0)
            _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)
            socket = PacketSocket(owning: ends[0], mtu: 895)
            peer = ends[1]
            let log = self.log
            sink = A2DPSampleSink(clock: ManualHostClock()) { event in log.events.withLock { $0.append(event) } }
        }

        deinit { close(peer) }

        func encoder() throws -> any BluetoothAudioEncoder {
            try makeBluetoothAudioEncoder(.sbc, configuration: A2DPCodec.sbc.configuration(from: A2DPCodec.sbc.sourceCapabilities), mtu: 895)
        }

        /// The packets the speaker's side has, and the SBC frames in them (A2DP's media payload header).
        func received() -> (packets: Int, sbcFrames: Int) {
            var scratch = [UInt8](repeating: 0, count: 2048)
            var (packets, frames) = (0, 0)
            while case let got = scratch.withUnsafeMutableBytes({ recv(peer, $0.baseAddress, $0.count, 0) }), got > 12 {
                packets += 1
                frames += Int(scratch[12] & 0x0F)
            }
            return (packets, frames)
        }
    }

    /// 20 ms of CD audio, each buffer's samples its index.
    static func period(_ index: Int) -> SampleBuffer {
        SampleBuffer(format: .cdAudio, presentationTime: .milliseconds(20 * index), frameCount: 882, data: [UInt8](repeating: UInt8(index), count: 882 * 4))
    }

    @Test func samplesWaitForTheStreamAndOnlyTheNewest100msGoOn() throws {
        let rig = try Rig()
        #expect(rig.sink.receive(Self.period(0)) && !rig.sink.isActive, "before samples start, buffers are dropped")
        rig.sink.beginAcquiring()
        for index in 1...10 { #expect(rig.sink.receive(Self.period(index))) }
        #expect(rig.received().packets == 0, "nothing is sent before the stream is acquired")
        #expect(rig.sink.start(socket: rig.socket, encoder: try rig.encoder(), sampleRate: 44_100))
        let (_, frames) = rig.received()
        // 5 buffers (4 410 frames) of the 10: whole packets of 7 SBC frames of 128 samples.
        #expect(frames * 128 <= 4_410 && frames * 128 > 4_410 - 7 * 128, "\(frames) SBC frames")
        #expect(rig.events.count == 1)
        if case .waitingDropped(let buffers)? = rig.events.first { #expect(buffers == 5) } else { Issue.record("no event for the buffers dropped") }
        #expect(rig.sink.isReady)
        #expect((rig.sink.bitrate ?? 0) > 300_000, "SBC at bitpool 53")
        // From now on every buffer is encoded and sent at once.
        for index in 11...30 { _ = rig.sink.receive(Self.period(index)) }
        let (packets, more) = rig.received()
        #expect(packets >= 20 * 882 / 128 / 7 - 1 && (frames + more) * 128 <= 25 * 882, "\(packets) packets, \(more) frames")
    }

    /// A codec whose encoding is not short on every box (AAC) is encoded on the sink's own task:
    /// every buffer still arrives, in order, and the delivering thread only queues it.
    @Test func aStreamNotEncodedInlineGetsEveryBufferThroughItsQueue() async throws {
        let rig = try Rig()
        rig.sink.beginAcquiring()
        #expect(rig.sink.start(socket: rig.socket, encoder: try rig.encoder(), sampleRate: 44_100, inline: false))
        for index in 0..<20 { #expect(rig.sink.receive(Self.period(index)), "queued") }
        let frames = Atomic<Int>(0)
        #expect(await eventually {
            frames.add(rig.received().sbcFrames, ordering: .relaxed)
            return frames.load(ordering: .relaxed) == 20 * 882 / 128 / 7 * 7
        }, "\(frames.load(ordering: .relaxed)) SBC frames")
        rig.sink.stop()
        _ = rig.sink.receive(Self.period(20))
        try await Task.sleep(for: .milliseconds(50))
        #expect(rig.received().packets == 0, "nothing after stop")
    }

    @Test func aClosedSocketIsReportedAndSamplesWaitForTheNextStream() throws {
        let rig = try Rig()
        rig.sink.beginAcquiring()
        #expect(rig.sink.start(socket: rig.socket, encoder: try rig.encoder(), sampleRate: 44_100))
        shutdown(rig.peer, Int32(SHUT_RDWR))
        for index in 0..<3 { _ = rig.sink.receive(Self.period(index)) }
        let closed = rig.events.compactMap { if case .socketClosed(let code) = $0 { code } else { nil } }
        #expect(closed.count == 1, "reported once: \(closed)")
        #expect(rig.sink.isAcquiring && rig.sink.bitrate == nil, "samples wait for the speaker's next stream")
    }

    @Test func stopEndsSendingAndSaysWhatRan() throws {
        let rig = try Rig()
        #expect(rig.sink.stop() == nil, "nothing ran")
        rig.sink.beginAcquiring()
        #expect(rig.sink.start(socket: rig.socket, encoder: try rig.encoder(), sampleRate: 44_100))
        for index in 0..<5 { _ = rig.sink.receive(Self.period(index)) }
        let ran = try #require(rig.sink.stop())
        #expect(ran.adaptation.droppedPackets == 0 && ran.encoder.bitrate > 0)
        _ = rig.received()
        for index in 5..<10 { _ = rig.sink.receive(Self.period(index)) }
        #expect(rig.received().packets == 0 && !rig.sink.isActive, "nothing is sent after stop")
        #expect(!rig.sink.start(socket: rig.socket, encoder: try rig.encoder(), sampleRate: 44_100), "a stream acquired after stop is not used")
    }

    /// The speaker stops reading: the socket's queue grows past six packets and the bit rate
    /// steps down, with the cause, once per half second of audio at most.
    @Test func aCongestedLinkStepsTheBitRateDown() throws {
        let rig = try Rig()
        rig.sink.beginAcquiring()
        #expect(rig.sink.start(socket: rig.socket, encoder: try rig.encoder(), sampleRate: 44_100))
        let before = try #require(rig.sink.bitrate)
        for index in 0..<50 { _ = rig.sink.receive(Self.period(index)) }
        let steps = rig.events.compactMap { if case .bitrateStepped(let step, let from, let to, let cause, _, _) = $0 { (step, from, to, cause) } else { nil } }
        #expect(!steps.isEmpty && steps.count <= 2, "\(steps.count) steps in a second of audio")
        #expect(steps.first?.0 == .down && steps.first?.1 == before && steps.first?.3 == "link congested")
        #expect(try #require(rig.sink.bitrate) < before)
    }
}
