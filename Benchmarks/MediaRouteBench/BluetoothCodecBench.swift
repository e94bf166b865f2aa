import BluetoothAudio
import Foundation

extension Bench {
    /// CPU per stream of each A2DP codec at 44.1 kHz stereo: a minute of a tone encoded in 10 ms
    /// pieces (as the paced delivery hands them over) into packets of an EDR MTU, timed by the
    /// thread's CPU clock; and the size of each codec's library file (what it costs in flash).
    static func bluetoothCodecs(seconds: Int) throws {
        let rate = 44_100
        var pcm: [UInt8] = []
        pcm.reserveCapacity(rate * seconds * 4)
        for frame in 0..<(rate * seconds) {
            let value = UInt16(bitPattern: Int16(sin(Double(frame) * 2 * .pi * 1_000 / Double(rate)) * 12_000))
            for _ in 0..<2 { pcm += [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)] }
        }
        let piece = rate / 100 * 4
        print("codec     bitrate(kbit/s)  cpu(% of a core)  packets  library")
        let runs: [(A2DPCodec, String?)] = [(.sbc, nil), (.aac, "fast"), (.aac, "twoloop"), (.aptx, nil), (.aptxHD, nil), (.ldac, nil)]
        for (codec, coder) in runs {
            if let missing = codec.missingLibrary() {
                print("\(codec): skipped, \(missing)")
                continue
            }
            let configuration = try codec.configuration(from: codec.sourceCapabilities)
            let encoder: any BluetoothAudioEncoder = if let coder {
                try AACEncoder(a2dpConfiguration: configuration, mtu: 895, coder: coder)
            } else {
                try makeBluetoothAudioEncoder(codec, configuration: configuration, mtu: 895)
            }
            var packets = 0
            let start = threadCPU()
            for offset in stride(from: 0, to: pcm.count, by: piece) {
                packets += try encoder.packets(from: Array(pcm[offset..<min(pcm.count, offset + piece)])).count
            }
            let cpu = threadCPU() - start
            var library = "linked"
            if let soname = codec.library?.soname {
                let path = ["/usr/lib/x86_64-linux-gnu/", "/lib/x86_64-linux-gnu/"].map { $0 + soname }.first { FileManager.default.fileExists(atPath: $0) }
                let size = path.flatMap { try? FileManager.default.attributesOfItem(atPath: URL(fileURLWithPath: $0).resolvingSymlinksInPath().path)[.size] as? Int }
                library = "\(soname) \(size.map { "\($0 / 1024) KiB" } ?? "?")"
            }
            let name = coder.map { "\(codec) (\($0))" } ?? codec.description
            print(String(format: "%-15@ %15d  %16.2f  %7d  %@", name as NSString, encoder.bitrate / 1000, cpu / Double(seconds) * 100, packets, library as NSString))
        }
    }

    static func threadCPU() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
