/// A device's playback clock against the box's, from the positions the device reports while it
/// plays a live stream: how fast it consumes the stream (its rate, in parts per million beside the
/// box's clock), how much later than at its start it now plays (the offset its drift has built
/// up), and the rate the stream should be produced at so that the offset goes back to zero and
/// stays there.
///
/// A live stream is paced by the box's clock; a renderer plays it by its own. ±100 ppm is 6 ms a
/// minute, 0.7 s over two hours: a fast device runs dry, a slow one plays ever later. Each report
/// is the device's position (stream seconds played since it started) at a box time, with the
/// stream seconds produced by then. The rate is the least-squares slope of position against time
/// over the reports kept; positions may be coarse (gmediarender's are whole seconds), so an
/// estimate counts only once it spans ``Configuration/minimumSpan`` and its standard error is
/// under ``Configuration/maximumUncertainty``. Positions that were all whole seconds so far count
/// as rounded to the second (their error is then at least that rounding's, 1/√12 s, however
/// well they line up), others as rounded to the millisecond. Rounded positions are unbiased only
/// when the reports' phase against the device's seconds wanders: a caller polling a device
/// dithers its interval (a poll locked to the device's seconds sees a sawtooth, not the rate). The offset is the change of the backlog (produced
/// less played) from the first report to the last, both read off the fitted line, so the
/// positions' coarseness averages out.
///
/// Nothing a device reports is trusted: a position that is not a number, goes backwards, or jumps
/// away from the fit starts the estimate again; a slope no clock has (beyond
/// ``Configuration/plausibleRange``) is no estimate; the table of reports is bounded.
public struct PlayoutRateEstimator: Sendable {
    /// Bounds and timings of the estimate and of the correction.
    public struct Configuration: Sendable, Hashable {
        /// Reports kept; the oldest go first (at one a second, an hour's worth).
        public var capacity: Int
        /// The span of reports an estimate needs at least.
        public var minimumSpan: Duration
        /// The rate's standard error (ppm) under which the estimate is used.
        public var maximumUncertainty: Double
        /// The furthest a device's clock may be from the box's (ppm); a steeper fit is no clock.
        public var plausibleRange: Double
        /// An offset is brought back over about this long.
        public var correctionTime: Duration
        /// The most the correction moves the production rate beyond the device's own rate (ppm).
        public var maximumTrim: Double
        /// A report this far from the fitted line (or a position going back) is a jump: a seek,
        /// a re-fetch, a device that restarted. The estimate starts again.
        public var jumpThreshold: Duration

        public init(
            capacity: Int = 4096, minimumSpan: Duration = .seconds(120), maximumUncertainty: Double = 20, plausibleRange: Double = 1000,
            correctionTime: Duration = .seconds(60), maximumTrim: Double = 500, jumpThreshold: Duration = .seconds(3)
        ) {
            self.capacity = max(8, capacity)
            self.minimumSpan = minimumSpan
            self.maximumUncertainty = maximumUncertainty
            self.plausibleRange = plausibleRange
            self.correctionTime = max(.seconds(1), correctionTime)
            self.maximumTrim = maximumTrim
            self.jumpThreshold = jumpThreshold
        }
    }

    /// What the reports say.
    public struct Estimate: Sendable, Hashable {
        /// The device's playback rate beside the box's clock, in parts per million (+: faster).
        public var ratePPM: Double
        /// The rate's standard error (ppm).
        public var uncertaintyPPM: Double
        /// How much later than at its first report the device plays now (+: later), in seconds.
        public var offset: Double
        /// The time the reports span, in seconds.
        public var span: Double
        /// Reports the estimate rests on.
        public var reports: Int
    }

    /// Why a report was not taken.
    public enum Rejection: Sendable, Hashable {
        /// Not a finite, non-negative position or time.
        case notANumber
        /// Earlier than the report before it.
        case outOfOrder
        /// A jump away from the fit (or backwards): the estimate started again from this report.
        case jumped
    }

    private struct Report {
        var time: Double
        var position: Double
        var produced: Double
    }

    /// The least-squares sums over the reports kept, times and positions taken from the run's
    /// first report (so the sums stay small enough for their precision): kept as reports come and
    /// go, so a report costs the same however many are kept.
    private struct Sums {
        var n = 0.0, t = 0.0, p = 0.0, tt = 0.0, tp = 0.0, pp = 0.0

        mutating func add(_ t: Double, _ p: Double, _ sign: Double) {
            n += sign
            self.t += sign * t
            self.p += sign * p
            tt += sign * t * t
            tp += sign * t * p
            pp += sign * p * p
        }
    }

    public let configuration: Configuration
    private var reports: [Report] = []
    /// Where the ring's oldest report is once it is full.
    private var oldest = 0
    /// The backlog (produced less played) at the first report of this run, read off the fit the
    /// first time the estimate was usable; nil before.
    private var referenceBacklog: Double?
    /// The first report of this run (kept apart: the ring lets it go after an hour).
    private var first: Report?
    private var sums = Sums()
    /// Whether a position with a fraction of a second came in this run.
    private var fractional = false
    /// The time and position the sums are taken from, and reports added since the sums were
    /// last made afresh (a stream of days would otherwise add up the sums' rounding).
    private var origin: (time: Double, position: Double)?
    private var sinceRebase = 0
    /// The last usable rate, kept across restarts (a device's clock does not change when it re-fetches).
    public private(set) var lastRate: Double?

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        reports.reserveCapacity(min(configuration.capacity, 512))
    }

    /// Reports in the table.
    public var count: Int { reports.count }

    /// Takes the device's `position` (stream seconds played since it started) at box time `time`
    /// (seconds), when `produced` stream seconds had been produced; nil when taken.
    @discardableResult
    public mutating func add(position: Double, at time: Double, produced: Double) -> Rejection? {
        guard position.isFinite, time.isFinite, produced.isFinite, position >= 0, abs(time) < 1e12, position < 1e9, abs(produced) < 1e9 else {
            return .notANumber
        }
        let report = Report(time: time, position: position, produced: produced)
        if let last = newest {
            guard time >= last.time else { return .outOfOrder }
            let threshold = seconds(configuration.jumpThreshold)
            let expected = fit().map { $0.intercept + $0.slope * (time - $0.origin) } ?? last.position + (time - last.time)
            if position < last.position || abs(position - expected) > threshold {
                restart()
                append(report)
                return .jumped
            }
        }
        append(report)
        if referenceBacklog == nil, let estimate = usableFit() {
            referenceBacklog = backlog(of: first ?? reports[oldest], on: estimate)
        }
        if let fit = usableFit() { lastRate = fit.slope }
        return nil
    }

    /// Forgets the reports (the device paused, seeked or fetched again): a new run starts with the
    /// next report; the last usable rate stays.
    public mutating func restart() {
        reports.removeAll(keepingCapacity: true)
        oldest = 0
        first = nil
        fractional = false
        sums = Sums()
        origin = nil
        sinceRebase = 0
        referenceBacklog = nil
    }

    /// The estimate, once the reports are enough for one (see the type's description).
    public var estimate: Estimate? {
        guard let fit = usableFit(), let referenceBacklog, let last = newest else { return nil }
        return Estimate(
            ratePPM: (fit.slope - 1) * 1e6, uncertaintyPPM: fit.slopeError * 1e6, offset: backlog(of: last, on: fit) - referenceBacklog,
            span: fit.span, reports: reports.count)
    }

    /// Stream seconds to produce per box second: the device's rate, less the offset over the
    /// correction time (within ``Configuration/maximumTrim``); the last usable rate while a new
    /// run gathers reports; 1 before any.
    public var productionRate: Double {
        guard let estimate else { return lastRate ?? 1 }
        let rate = 1 + estimate.ratePPM * 1e-6
        let trim = max(-configuration.maximumTrim, min(configuration.maximumTrim, estimate.offset / seconds(configuration.correctionTime) * 1e6))
        return rate - trim * 1e-6
    }

    // MARK: The fit

    private struct Fit {
        /// Times are taken from this origin (the first report's), for the sums' precision.
        var origin: Double
        var intercept: Double
        var slope: Double
        var slopeError: Double
        var span: Double
    }

    private var newest: Report? {
        guard !reports.isEmpty else { return nil }
        return reports[(oldest + reports.count - 1) % reports.count]
    }

    private mutating func append(_ report: Report) {
        if first == nil { first = report }
        if report.position != report.position.rounded(.down) { fractional = true }
        let origin = self.origin ?? (report.time, report.position)
        self.origin = origin
        if reports.count < configuration.capacity {
            reports.append(report)
        } else {
            let leaving = reports[oldest]
            sums.add(leaving.time - origin.time, leaving.position - origin.position, -1)
            reports[oldest] = report
            oldest = (oldest + 1) % reports.count
        }
        sums.add(report.time - origin.time, report.position - origin.position, 1)
        sinceRebase += 1
        if sinceRebase >= configuration.capacity { rebase() }
    }

    /// The sums made afresh from the oldest report kept.
    private mutating func rebase() {
        let base = reports[oldest]
        origin = (base.time, base.position)
        sums = Sums()
        for report in reports { sums.add(report.time - base.time, report.position - base.position, 1) }
        sinceRebase = 0
    }

    /// The backlog at `report`'s time with its position read off the fit.
    private func backlog(of report: Report, on fit: Fit) -> Double {
        report.produced - (fit.intercept + fit.slope * (report.time - fit.origin))
    }

    private func usableFit() -> Fit? {
        guard let fit = fit(), fit.span >= seconds(configuration.minimumSpan),
            fit.slopeError * 1e6 <= configuration.maximumUncertainty,
            abs(fit.slope - 1) * 1e6 <= configuration.plausibleRange
        else { return nil }
        return fit
    }

    /// Least squares of position on time over the reports kept.
    private func fit() -> Fit? {
        guard reports.count >= 3, let origin, let last = newest else { return nil }
        let n = sums.n
        let meanT = sums.t / n, meanP = sums.p / n
        let stt = sums.tt - n * meanT * meanT
        let stp = sums.tp - n * meanT * meanP
        let spp = sums.pp - n * meanP * meanP
        guard stt > 1e-9 else { return nil }
        let slope = stp / stt
        // At least the positions' rounding: points that line up exactly are no surer than that.
        let resolution = fractional ? 0.001 : 1
        let variance = max((spp - slope * stp) / max(1, n - 2), resolution * resolution / 12)
        return Fit(
            origin: origin.time, intercept: origin.position + meanP - slope * meanT, slope: slope, slopeError: (variance / stt).squareRoot(),
            span: last.time - reports[oldest].time)
    }

    private func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }
}
