import MediaDevice
import RoutingModel
import Synchronization

/// What a simulated TV does with a route's real-time video: it takes each raw picture as it
/// comes (no encoding: the demo and tests need no encoder) and counts those of the route's
/// size, and each access unit of H.264 an app encoded;
/// ``LoopbackExtension/videoPicturesShown(session:)`` says how many.
final class LoopbackVideoReceiver: RealtimeVideoReceiver {
    let format: VideoFrameFormat
    let shown = Atomic<UInt64>(0)
    let finished = Atomic<Bool>(false)

    init(format: VideoFrameFormat) { self.format = format }

    func receive(_ frame: VideoFrame) -> Bool {
        guard !finished.load(ordering: .relaxed), !format.encoding.isRaw || frame.data.count == format.frameBytes else { return false }
        shown.add(1, ordering: .relaxed)
        return true
    }

    func finish() { finished.store(true, ordering: .relaxed) }

    var codec: String { format.encoding.isRaw ? "raw \(format.encoding.rawValue) (simulated)" : "H.264 (simulated)" }
    var bitrate: Int { format.frameBytes * 8 * format.frameRateNumerator / max(1, format.frameRateDenominator) }
}
