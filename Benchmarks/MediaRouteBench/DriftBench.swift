import Foundation
import LiveStreaming
import RoutingModel
import Synchronization

extension Bench {
    /// What following a device's clock costs a live stream: `seconds` of a tone appended in
    /// delivery's 100 ms batches to a LiveAudioStream (LPCM, then FLAC), once for a device on the
    /// box's clock (samples unchanged) and once for a device 100 ppm fast whose positions engage
    /// the resampler after a few seconds; the thread's CPU per second of audio, and the rate found.
    static func drift(seconds: Int) {
        let rate = 44_100
        let batchFrames = rate / 10
        var batch: [UInt8] = []
        for frame in 0..<batchFrames {
            let value = UInt16(bitPattern: Int16(sin(Double(frame) * 2 * .pi * 441 / Double(rate)) * 12_000))
            for _ in 0..<2 { batch += [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)] }
        }
        let format = SampleBuffer.Format(encoding: .pcmS16LE, sampleRate: rate, channels: 2)
        print("encoding  device clock  cpu(% of a core)  rate found (ppm)  correction (ppm)  bytes")
        for encoding in [LiveAudioEncoding.lpcm, .flac] {
            for ppm in [0.0, 100.0] {
                let clock = Atomic<Int64>(0)
                let drift = PlayoutRateEstimator.Configuration(minimumSpan: .seconds(5), maximumUncertainty: 50)
                let stream = LiveAudioStream(
                    encoding: encoding, sampleRate: rate, channels: 2, configuration: LiveAudioStream.Configuration(drift: drift),
                    now: { .nanoseconds(clock.load(ordering: .relaxed)) })
                let start = threadCPU()
                for tick in 0..<(seconds * 10) {
                    let now = Duration.nanoseconds(clock.load(ordering: .relaxed))
                    stream.append(SampleBuffer(format: format, presentationTime: now, frameCount: batchFrames, data: batch))
                    clock.add(100_000_000, ordering: .relaxed)
                    if ppm != 0, tick % 10 == 9 {
                        let elapsed = Double(clock.load(ordering: .relaxed)) / 1e9
                        stream.devicePlayed((elapsed * (1 + ppm * 1e-6) * 1_000).rounded() / 1_000)
                    }
                }
                let cpu = threadCPU() - start
                let status = stream.driftStatus
                print(
                    String(
                        format: "%-8@  %+8.0f ppm  %16.3f  %16@  %16@  %d", encoding.rawValue as NSString, ppm, cpu / Double(seconds) * 100,
                        (status.ratePPM.map { String(format: "%.1f", $0) } ?? "-") as NSString,
                        (status.correctionPPM.map { String(format: "%.1f", $0) } ?? "-") as NSString, stream.bytes.statistics.bytesWritten))
            }
        }
    }
}
