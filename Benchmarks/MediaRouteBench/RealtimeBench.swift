import BLESpeakerExtension
import BluetoothAudio
import Foundation
import IOReactor
import MediaClock
import MediaDevice
import RealtimeAudio
import RoutingModel
import Synchronization
import Transport

/// `mediaroute-bench realtime [SECONDS] [LOAD] [CODEC] [PERIOD_MS]`: one real-time stream through
/// the daemon's per-stream path, 44.1 kHz stereo S16 to SBC (or CODEC), for SECONDS (default 20)
/// with LOAD busy processes beside it (default 0), delivery ticking every PERIOD_MS (default:
/// the period the daemon gives a lone Bluetooth route).
///
/// The path is RouteSystem's: a Unix stream socket with the smallest send buffer, a
/// ``PacedAudioDelivery`` on the I/O reactor, and on the reactor thread BLESpeakerExtension's
/// ``A2DPSampleSink``: SBC (libsbc, bitpool 53) into RTP packets of a 895-byte MTU, each sent on
/// a SEQPACKET socket whose other end a thread reads and drops (BlueZ's side), with the link
/// adaptation's queue check after each buffer. The writer is a thread that
/// writes as fast as the socket takes, a marker frame every 200 ms: the time from its write
/// to the reactor handing it to the encoder is the latency delivery adds. CPU is the process's, less the
/// writer's and the transport reader's threads.
extension Bench {
    static func realtime(seconds: Int, load: Int, codec: A2DPCodec = .sbc, period: Duration? = nil) async throws {
        let pcm = SampleBuffer.Format.cdAudio
        var transport: [Int32] = [-1, -1]
        precondition(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &transport) == 0)

        let encoder = try makeBluetoothAudioEncoder(codec, configuration: try codec.configuration(from: codec.sourceCapabilities), mtu: 895)
        let markers = Mutex<[Duration]>([])  // latency of each marker seen
        let written = Mutex<[ContinuousClock.Instant]>([])
        // As the daemon times a lone route on this codec, unless PERIOD_MS says otherwise.
        let period = period ?? (codec == .ldac ? nil : BLESpeakerExtension.a2dpDeliveryPeriod)
        let configuration = period.map { PacedAudioDelivery.Configuration.batched(period: $0) } ?? PacedAudioDelivery.Configuration()
        // The writer's socket as the daemon sizes it for this timing.
        let (reader, writer) = try PacedAudioDelivery.socketPair(sendBuffer: PacedAudioDelivery.sendBufferBytes(for: pcm, configuration: configuration))
        let sendSocket = transport[0]
        let receiveSocket = transport[1]
        // The daemon's A2DP stream: encoded and sent on the reactor thread as buffers are delivered.
        let sink = A2DPSampleSink(clock: SystemHostClock()) { _ in }
        sink.beginAcquiring()
        // As the daemon: AAC on the sink's own task, the others on the reactor thread.
        _ = sink.start(socket: PacketSocket(owning: sendSocket, mtu: 895), encoder: encoder, sampleRate: 44_100, inline: codec != .aac)
        let seen = Atomic<Int>(0)
        let (ends, finished) = AsyncStream.makeStream(of: Void.self)
        let delivery = try PacedAudioDelivery(
            reading: reader, format: pcm, routeLatency: .zero, configuration: configuration,
            deliver: { buffer in
                // The marker: a frame of 0x7FFF in both channels.
                buffer.data.withUnsafeBytes { bytes in
                    var index = 0
                    while index + 3 < bytes.count {
                        if bytes.loadUnaligned(fromByteOffset: index, as: UInt32.self) == 0x7FFF_7FFF {
                            let now = ContinuousClock.now
                            let count = seen.add(1, ordering: .relaxed).oldValue
                            if let sent = written.withLock({ count < $0.count ? $0[count] : nil }) { markers.withLock { $0.append(now - sent) } }
                        }
                        index += 4
                    }
                }
                return sink.receive(buffer)
            },
            ended: { _ in finished.finish() })
        try delivery.start()

        let threadCPU = Mutex<Double>(0)
        @Sendable func ownCPU() -> Double {
            var usage = rusage()
            getrusage(1 /* RUSAGE_THREAD */, &usage)
            return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        }
        let stop = Atomic<Bool>(false)
        let transportReader = Thread {
            var scratch = [UInt8](repeating: 0, count: 2048)
            while !stop.load(ordering: .relaxed) {
                let got = scratch.withUnsafeMutableBytes { recv(receiveSocket, $0.baseAddress!, $0.count, 0) }
                if got <= 0 { break }
            }
            threadCPU.withLock { $0 += ownCPU() }
        }
        transportReader.start()
        let totalFrames = 44_100 * seconds
        let writerThread = Thread {
            let silence = [UInt8](repeating: 0, count: 441 * 4)
            let marker: [UInt8] = [0xFF, 0x7F, 0xFF, 0x7F]
            var frames = 0
            var nextMarker = 0
            while frames < totalFrames {
                if frames >= nextMarker {
                    written.withLock { $0.append(.now) }
                    _ = marker.withUnsafeBytes { send(writer, $0.baseAddress!, 4, Int32(MSG_NOSIGNAL)) }
                    frames += 1
                    nextMarker += 8_820
                }
                let count = min(441, totalFrames - frames, nextMarker - frames)
                _ = silence.withUnsafeBytes { send(writer, $0.baseAddress!, count * 4, Int32(MSG_NOSIGNAL)) }
                frames += count
            }
            threadCPU.withLock { $0 += ownCPU() }
            close(writer)
        }
        var hogs: [Process] = []
        for _ in 0..<load {
            let hog = Process()
            hog.executableURL = URL(fileURLWithPath: "/usr/bin/yes")
            hog.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
            try hog.run()
            hogs.append(hog)
        }
        let cpuBefore = cpuSeconds()
        let start = ContinuousClock.now
        writerThread.start()
        for await _ in ends {}
        let elapsed = ContinuousClock.now - start
        let cpuAfter = cpuSeconds()
        for hog in hogs {
            kill(hog.processIdentifier, SIGKILL)
            hog.waitUntilExit()
        }
        stop.store(true, ordering: .relaxed)
        sink.stop()
        Glibc.shutdown(receiveSocket, Int32(SHUT_RDWR))
        try await Task.sleep(for: .milliseconds(100))
        let statistics = delivery.statistics
        let wall = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let cpu = cpuAfter - cpuBefore - threadCPU.withLock { $0 }
        let latencies = markers.withLock { $0 }.map(milliseconds).sorted()
        print("realtime: \(seconds) s of 44.1 kHz stereo S16 → \(codec) (\(encoder.bitrate / 1000) kbit/s, MTU 895), \(load) busy process(es) beside it, a tick every \(configuration.period)")
        let helpers = threadCPU.withLock { $0 }
        print("  wall \(format(wall, 2)) s; delivery + \(codec) + transport send CPU \(format(cpu, 3)) s = \(format(100 * cpu / wall, 3)) % of one core (process \(format(cpuAfter - cpuBefore, 3)) s less the writer's and transport reader's threads \(format(helpers, 3)) s)")
        print("  frames received \(statistics.framesReceived), delivered \(statistics.framesDelivered), underruns \(statistics.underruns), silence frames \(statistics.silenceFrames), dropped \(statistics.framesDropped)")
        if !latencies.isEmpty {
            print("  fd write → handed to the encoder (\(latencies.count) markers): p50 \(format(percentile(latencies, 0.5), 1)) ms, p95 \(format(percentile(latencies, 0.95), 1)) ms, max \(format(latencies.last!, 1)) ms; declared \(format(milliseconds(PacedAudioDelivery.addedLatency(for: pcm, configuration: configuration)), 1)) ms")
        }
    }
}
