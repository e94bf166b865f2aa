import Foundation
public import RoutingModel

/// What a renderer showed, recorded by a GStreamer sink synced to its pipeline clock: each
/// picture as 8-bit luma of `width`×`height` into `framesPath`, and a line per read into
/// `timesPath` (CLOCK_MONOTONIC seconds and bytes so far), written by ``TimedOutput``'s recorder.
public struct VideoOutput: Sendable {
    public let framesPath: String
    public let timesPath: String
    public let width: Int
    public let height: Int

    public init(framesPath: String, timesPath: String, width: Int, height: Int) {
        self.framesPath = framesPath
        self.timesPath = timesPath
        self.width = width
        self.height = height
    }

    /// The GStreamer sink description that records into `fifo` (the renderer's video pipe).
    public func sink(into fifo: String) -> String {
        "videoconvert ! videoscale ! video/x-raw,format=GRAY8,width=\(width),height=\(height) ! filesink location=\(fifo) sync=true buffer-mode=unbuffered"
    }

    /// Every picture recorded, in order: the number its pattern shows (``VideoTestPattern``;
    /// nil when unreadable) and when its last byte reached the recorder.
    public func frames() -> [(number: Int?, time: Double)] {
        let size = width * height
        let bytes = (try? [UInt8](Data(contentsOf: URL(fileURLWithPath: framesPath)))) ?? []
        let reads: [(time: Double, total: Int)] = ((try? String(contentsOfFile: timesPath, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
            let fields = $0.split(separator: " ")
            guard fields.count == 2, let time = Double(fields[0]), let total = Int(fields[1]) else { return nil }
            return (time, total)
        }
        var result: [(number: Int?, time: Double)] = []
        var read = 0
        for start in stride(from: 0, to: bytes.count - size + 1, by: size) {
            while read < reads.count, reads[read].total < start + size { read += 1 }
            let time = read < reads.count ? reads[read].time : .nan
            result.append((VideoTestPattern.number(inGray: Array(bytes[start..<start + size]), width: width, height: height), time))
        }
        return result
    }
}

/// Writes pictures `numbers` of ``VideoTestPattern`` into `descriptor` on a thread of its own,
/// one every `period` (`period` zero: as fast as the socket takes them), then closes it; each is
/// made as it is written (`making`: the pattern's picture of that number by default).
/// Returns when each picture's write ended (CLOCK_MONOTONIC seconds, by number); nil when a write failed.
public func writePicturesOnOwnThread(
    _ numbers: Range<Int>, format: VideoFrameFormat, to descriptor: Int32, period: Duration,
    making: (@Sendable (Int) -> [UInt8])? = nil
) -> Task<[Int: Double]?, Never> {
    let make = making ?? { VideoTestPattern.frame($0, format: format) }
    return Task {
        await withCheckedContinuation { finished in
            Thread {
                var times: [Int: Double] = [:]
                let start = ContinuousClock.now
                var failed = false
                for (index, number) in numbers.enumerated() {
                    let picture = make(number)
                    let due = start + period * index
                    let wait = due - ContinuousClock.now
                    if wait > .zero { usleep(UInt32(wait / .microseconds(1))) }
                    guard writeBlocking(picture, to: descriptor, piece: picture.count) else {
                        failed = true
                        break
                    }
                    var now = timespec()
                    clock_gettime(CLOCK_MONOTONIC, &now)
                    times[number] = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
                }
                close(descriptor)
                finished.resume(returning: failed ? nil : times)
            }.start()
        }
    }
}
