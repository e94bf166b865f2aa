/// Keeps a device's output on the group timeline: small errors are trimmed away
/// with a rate correction, large ones are fixed with a seek.
///
/// Thresholds (documented in Docs/architecture.md):
/// - `|error| ≤ deadband` (2 ms): play at the group's rate;
/// - up to `hardResync` (100 ms): trim the rate by `−error / horizon`, capped at
///   ±`maximumTrim` (500 ppm), so 10 ms of error is gone in 20 s without an
///   audible pitch change;
/// - beyond: seek to the expected time (a trim would take minutes).
public struct DriftCorrector: Sendable, Hashable {
    /// What to do to the device.
    public enum Correction: Sendable, Hashable {
        case none(rate: Double)
        case trim(rate: Double)
        case seek(to: Double)
    }

    public var deadband: Double = 0.002
    public var hardResync: Double = 0.100
    public var maximumTrim: Double = 500e-6
    public var horizon: Double = 10

    public init() {}

    /// The correction for a device at `position` when the group expects `expected`
    /// and plays at `groupRate`. Devices that cannot trim their rate only get seeks.
    public func correction(position: Double, expected: Double, groupRate: Double, canTrimRate: Bool = true) -> Correction {
        let error = position - expected
        guard groupRate > 0 else { return abs(error) > deadband ? .seek(to: expected) : .none(rate: 0) }
        if abs(error) > hardResync || (!canTrimRate && abs(error) > deadband * 10) { return .seek(to: expected) }
        guard abs(error) > deadband, canTrimRate else { return .none(rate: groupRate) }
        let trim = min(max(-error / horizon, -maximumTrim), maximumTrim)
        return .trim(rate: groupRate * (1 + trim))
    }
}
