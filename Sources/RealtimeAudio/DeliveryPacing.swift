/// How many frames a device has consumed since delivery started, at its nominal rate:
/// the clock delivery runs by, whatever the writer does.
///
/// A value over durations since the start, so it is tested with plain numbers. When the
/// process itself was held up (a stalled machine, a stopped daemon) by more than
/// `maxBurst` frames, the frames it missed are skipped instead of sent in one burst a
/// device would overflow on.
public struct DeliveryPacing: Sendable, Hashable {
    public let sampleRate: Int
    /// The most frames one tick hands over.
    public let maxBurst: Int
    /// Frames accounted for since the start: handed over or skipped.
    public private(set) var position: Int64 = 0
    /// Frames skipped because the process fell behind.
    public private(set) var skipped: Int64 = 0

    public init(sampleRate: Int, maxBurst: Int) {
        self.sampleRate = max(1, sampleRate)
        self.maxBurst = max(1, maxBurst)
    }

    /// Frames the device's clock has run through `elapsed` after the start.
    public func clockFrames(after elapsed: Duration) -> Int64 {
        let (seconds, attoseconds) = elapsed.components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        let rate = Int64(sampleRate)
        let whole = seconds.multipliedReportingOverflow(by: rate)
        guard !whole.overflow else { return .max }
        // Nanoseconds keep the product in range: 1e9 × 384 000 < 2^63.
        let fraction = (attoseconds / 1_000_000_000) * rate / 1_000_000_000
        let sum = whole.partialValue.addingReportingOverflow(fraction)
        return sum.overflow ? .max : sum.partialValue
    }

    /// How long the device's clock takes to run through `frames` frames.
    public func duration(ofFrames frames: Int64) -> Duration {
        let rate = Int64(sampleRate)
        let frames = max(0, frames)
        return .seconds(frames / rate) + .nanoseconds((frames % rate) * 1_000_000_000 / rate)
    }

    /// The frames due at `elapsed`, skipping what is beyond one burst; call ``advance(by:)``
    /// with what was handed over.
    public mutating func framesDue(after elapsed: Duration) -> Int {
        let due = clockFrames(after: elapsed) - position
        guard due > 0 else { return 0 }
        if due > Int64(maxBurst) {
            let excess = due - Int64(maxBurst)
            position += excess
            skipped += excess
            return maxBurst
        }
        return Int(due)
    }

    /// Accounts for `frames` handed over.
    public mutating func advance(by frames: Int) {
        position += Int64(max(0, frames))
    }
}
