public import RoutingModel

/// How a live stream follows its device's clock: what the device's position reports say
/// (``LiveAudioStream/devicePlayed(_:at:)``) and the rate the stream is produced at.
public struct LiveDriftStatus: Sendable, Hashable {
    /// The device's playback rate beside the box's clock (ppm, +: faster); nil until its reports
    /// are enough for an estimate.
    public var ratePPM: Double?
    /// The rate's uncertainty (ppm): a standard error, or a bound for whole-second positions.
    public var uncertaintyPPM: Double?
    /// How much later than when it started the device plays now (+: later): its drift not yet
    /// corrected. Nil with the rate.
    public var offset: Duration?
    /// The production rate's distance from the box's clock (ppm): the correction applied; nil
    /// while samples go through unchanged.
    public var correctionPPM: Double?
    /// Position reports the estimate rests on now.
    public var reports: Int
    /// Why drift cannot be corrected on this box (no libsoxr); nil otherwise.
    public var resamplerFailure: String?

    public init(
        ratePPM: Double? = nil, uncertaintyPPM: Double? = nil, offset: Duration? = nil, correctionPPM: Double? = nil, reports: Int = 0,
        resamplerFailure: String? = nil
    ) {
        self.ratePPM = ratePPM
        self.uncertaintyPPM = uncertaintyPPM
        self.offset = offset
        self.correctionPPM = correctionPPM
        self.reports = reports
        self.resamplerFailure = resamplerFailure
    }
}

extension LiveDriftStatus {
    /// Writes what is measured into a route's status (`status --json`, `Session1.ClockDrift`,
    /// `TimelineOffset`, `DriftCorrection`).
    public func apply(to details: inout RouteStatus.Details) {
        details.deviceClockPPM = ratePPM
        details.timelineOffsetMicroseconds = offset.map { Int64($0 / .microseconds(1)) }
        details.driftCorrectionPPM = correctionPPM
    }
}

extension LiveDriftStatus {
    /// What a route's event says when its device goes off its timeline (`off`) or comes back
    /// (``LiveAudioStream/timelineChange(precision:)``).
    public func timelineReason(off: Bool) -> String {
        let milliseconds = offset.map { Int(($0 / .milliseconds(1)).rounded()) } ?? 0
        let clock = ratePPM.map { "\(Int($0.rounded())) ppm" } ?? "unknown"
        return off
            ? "plays \(milliseconds) ms off its timeline (its clock: \(clock) from the box's; the correction does not keep up)"
            : "back on its timeline (\(milliseconds) ms; its clock: \(clock))"
    }
}
