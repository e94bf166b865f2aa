/// A device's playback clock against the box's, from the positions the device reports while it
/// plays a live stream: how fast it consumes the stream (its rate, in parts per million beside the
/// box's clock), how much later than at its start it now plays (the offset its drift has built
/// up), and the rate the stream should be produced at so that the offset goes back to zero and
/// stays there.
///
/// A live stream is paced by the box's clock; a renderer plays it by its own. ±100 ppm is 6 ms a
/// minute, 0.7 s over two hours: a fast device runs dry, a slow one plays ever later. Each report
/// is the device's position (stream seconds played since it started) at a box time, with the
/// stream seconds produced by then. An estimate counts only once it spans
/// ``Configuration/minimumSpan`` and its rate is known to within
/// ``Configuration/maximumUncertainty``.
///
/// - Positions with a fraction of a second (a Cast receiver's, to the millisecond): the rate is
///   the least-squares slope of position against time, its uncertainty the slope's standard
///   error.
/// - Positions that were all whole seconds so far (gmediarender's RelTime, truncated): a
///   least-squares fit would see ±0.5 s of rounding in every report, its error shrinking as
///   1/√n (20 ppm only after about 22 minutes, and the position now known to no better than
///   ~20 ms). Each report instead says exactly where the device was: it had played at least
///   `position` seconds when the answer came and less than `position` + 1 when the question
///   left. The rates (and positions) every report allows form an interval; the estimate is its
///   middle and the uncertainty its half-width, a bound rather than a standard error. Reports
///   whose phase against the device's seconds wanders pin that phase to within about a poll
///   interval over their count, so the bound shrinks as 1/n rather than 1/√n: a caller polling
///   a device dithers its interval (a poll locked to the device's seconds learns nothing new).
///   Reports that contradict each other by more than a thirtieth of
///   ``Configuration/jumpThreshold`` (0.1 s: a device that stalled to buffer) start the
///   estimate again; by more than a millisecond, they were read earlier than their age allows,
///   and the age this device's positions are given grows (by at least 0.1 s, four times the
///   contradiction: the contradiction is the least the best line needs, not what the true one
///   does) until they agree.
///
/// The offset is the change of the backlog (produced less played) from the run's first report
/// to its last, the played part read off the estimated rate; only the part of it beyond its
/// uncertainty (the rate's times the time between them) is corrected, so a device whose clock is
/// the box's is not moved by the noise of its own reports.
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
        /// The rate's uncertainty (ppm: its standard error, or for whole seconds the half-width
        /// of the rates every report allows) under which the estimate is used.
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
        /// How old a whole-second position may be when the device is asked: renderers read their
        /// player's position on a timer and answer the last one read (gmediarender every 500 ms,
        /// by its source). A position is taken to have been read no earlier than this before the
        /// question left; zero for a device that reads it when asked.
        public var positionAge: Duration

        public init(
            capacity: Int = 4096, minimumSpan: Duration = .seconds(120), maximumUncertainty: Double = 20, plausibleRange: Double = 1000,
            correctionTime: Duration = .seconds(60), maximumTrim: Double = 500, jumpThreshold: Duration = .seconds(3),
            positionAge: Duration = .seconds(1)
        ) {
            self.positionAge = max(.zero, positionAge)
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
        /// The rate's uncertainty (ppm): its standard error, or for whole-second positions the
        /// half-width of the rates every report allows (a bound).
        public var uncertaintyPPM: Double
        /// How much later than at its first report the device plays now (+: later), in seconds.
        public var offset: Double
        /// How far off ``offset`` may be (seconds): the rate's uncertainty over the time between
        /// the two reports. Only the part of the offset beyond it is corrected.
        public var offsetUncertainty: Double
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
        /// When the answer came, and when its question left (the device read its position between).
        var time: Double
        var asked: Double
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
    /// The fit over the reports kept, made as each comes.
    private var current: Fit?
    /// The whole-second reports' bounds (see ``interval()``): the upper hull of the points
    /// (answer's time, position) and the lower hull of (question's time, position + 1), times
    /// from `hullOrigin`; reports that left the table since they were made.
    private var floors = ConvexChain(upper: true)
    private var ceilings = ConvexChain(upper: false)
    private var hullOrigin: Double?
    private var leftSinceHulls = 0
    /// What this device's positions showed to be older than ``Configuration/positionAge`` says.
    private var extraAge = 0.0
    /// Reports that contradict each other by less (seconds) agree: timing noise.
    static let agreement = 0.001
    /// The most a device's positions may turn out older than said (seconds).
    static let mostExtraAge = 1.0
    /// The first report of this run (kept apart: the ring lets it go after an hour).
    private var first: Report?
    private var sums = Sums()
    /// Whether a position with a fraction of a second came in this run.
    private var fractional = false
    /// The time and position the sums are taken from, and reports added since the sums were
    /// last made afresh (a stream of days would otherwise add up the sums' rounding).
    private var origin: (time: Double, position: Double)?
    private var sinceRebase = 0
    /// The last rate the stream followed (without its trim), kept across restarts (a device's
    /// clock does not change when it re-fetches).
    public private(set) var lastRate: Double?

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        reports.reserveCapacity(min(configuration.capacity, 512))
    }

    /// Reports in the table.
    public var count: Int { reports.count }

    /// Takes the device's `position` (stream seconds played since it started) at box time `time`
    /// (seconds), when `produced` stream seconds had been produced; nil when taken. `asked` is
    /// when the question left (the device read its position between the two); `time` when nil.
    @discardableResult
    public mutating func add(position: Double, at time: Double, produced: Double, asked: Double? = nil) -> Rejection? {
        let asked = asked ?? time
        guard position.isFinite, time.isFinite, produced.isFinite, asked.isFinite, position >= 0, abs(time) < 1e12, position < 1e9,
            abs(produced) < 1e9, asked <= time, time - asked < 60
        else {
            return .notANumber
        }
        let report = Report(time: time, asked: asked, position: position, produced: produced)
        if let last = newest {
            guard time >= last.time, asked >= last.asked else { return .outOfOrder }
            let threshold = seconds(configuration.jumpThreshold)
            let expected = current.map { $0.intercept + $0.slope * (time - $0.origin) } ?? last.position + (time - last.time)
            if position < last.position || abs(position - expected) > threshold {
                restart()
                append(report)
                return .jumped
            }
        }
        append(report)
        current = fit()
        if case .contradicted = current?.kind {
            restart()
            append(report)
            return .jumped
        }
        // Whole seconds that contradict each other a little were read earlier than their age
        // allows: the device's positions are older than said, by more than the contradiction
        // shows (it is the least the best line needs, not what the true one does). Its age grows
        // by at least 0.1 s, four times the contradiction, until they agree (a device's timer
        // does not change; the age stays across restarts).
        var tries = 0
        while let fit = current, fit.kind == .interval, fit.inconsistency > Self.agreement, tries < 8 {
            extraAge = min(Self.mostExtraAge, extraAge + max(0.1, 4 * fit.inconsistency))
            rebuildHulls()
            current = self.fit()
            tries += 1
        }
        if let correction = correction() { lastRate = correction.rate }
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
        current = nil
        floors = ConvexChain(upper: true)
        ceilings = ConvexChain(upper: false)
        hullOrigin = nil
        leftSinceHulls = 0
    }

    /// The estimate, once the reports are enough for one (see the type's description).
    public var estimate: Estimate? {
        guard let fit = usableFit(), let offset = offset(on: fit) else { return nil }
        return Estimate(
            ratePPM: (fit.slope - 1) * 1e6, uncertaintyPPM: fit.slopeError * 1e6, offset: offset.value, offsetUncertainty: offset.uncertainty,
            span: fit.span, reports: reports.count)
    }

    /// How much the backlog (produced less played, the played part read off `fit`'s rate) has
    /// grown since the run's first report, and how far off that may be (seconds).
    private func offset(on fit: Fit) -> (value: Double, uncertainty: Double)? {
        guard let first, let last = newest else { return nil }
        let elapsed = last.time - first.time
        return ((last.produced - first.produced) - fit.slope * elapsed, fit.slopeError * elapsed)
    }

    /// Stream seconds to produce per box second: the device's rate, less the part of the offset
    /// beyond its uncertainty over the correction time (within ``Configuration/maximumTrim``);
    /// the last usable rate while a new run gathers reports; 1 before any.
    ///
    /// Whole-second reports correct by what they are sure of before their estimate is shown: the
    /// rate nearest the box's that the interval allows (none while it holds the box's own), so
    /// a device is never corrected past its true rate, only less far.
    public var productionRate: Double {
        guard let correction = correction() else { return lastRate ?? 1 }
        return correction.rate - correction.trim
    }

    /// The device's rate as far as it is sure, and the trim that brings its offset back (both
    /// as fractions of the box's rate); nil while there is none.
    private func correction() -> (rate: Double, trim: Double)? {
        guard let fit = current, let offset = offset(on: fit) else { return nil }
        let ppm: Double
        switch fit.kind {
        case .contradicted: return nil
        case .leastSquares:
            guard usableFit() != nil else { return nil }
            ppm = (fit.slope - 1) * 1e6
        case .interval:
            guard fit.span >= seconds(configuration.minimumSpan), abs(fit.slope - 1) * 1e6 <= configuration.plausibleRange else { return nil }
            let middle = (fit.slope - 1) * 1e6, bound = fit.slopeError * 1e6
            ppm = middle > bound ? middle - bound : middle < -bound ? middle + bound : 0
        }
        let certain = max(0, abs(offset.value) - offset.uncertainty)
        let trim = max(
            -configuration.maximumTrim, min(configuration.maximumTrim, (offset.value < 0 ? -certain : certain) / seconds(configuration.correctionTime) * 1e6))
        return (1 + ppm * 1e-6, trim * 1e-6)
    }

    // MARK: The fit

    private struct Fit {
        enum Kind {
            /// Least squares; `slopeError` is the slope's standard error.
            case leastSquares
            /// The middle of the rates every whole-second report allows; `slopeError` is the
            /// interval's half-width.
            case interval
            /// Whole-second reports that no rate fits within the tolerance: the device jumped.
            case contradicted
        }

        var kind: Kind
        /// Times are taken from this origin (the first report's), for the sums' precision.
        var origin: Double
        var intercept: Double
        var slope: Double
        var slopeError: Double
        var span: Double
        /// How far (seconds) the reports contradict each other at best: zero for a line that
        /// fits them all.
        var inconsistency: Double = 0
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
            leftSinceHulls += 1
        }
        sums.add(report.time - origin.time, report.position - origin.position, 1)
        sinceRebase += 1
        if sinceRebase >= configuration.capacity { rebase() }
        // The hulls grow with each report; the reports that left the table stay in them (still
        // true of the device) until an eighth of the table has left, then they are made afresh.
        if leftSinceHulls >= max(1, configuration.capacity / 8) { rebuildHulls() } else { addToHulls(report) }
    }

    private mutating func addToHulls(_ report: Report) {
        let origin = hullOrigin ?? report.asked
        hullOrigin = origin
        floors.add(x: report.time - origin, y: report.position)
        ceilings.add(x: report.asked - seconds(configuration.positionAge) - extraAge - origin, y: report.position + 1)
    }

    private mutating func rebuildHulls() {
        floors = ConvexChain(upper: true)
        ceilings = ConvexChain(upper: false)
        hullOrigin = nil
        leftSinceHulls = 0
        for index in 0..<reports.count { addToHulls(reports[(oldest + index) % reports.count]) }
    }

    /// The sums made afresh from the oldest report kept.
    private mutating func rebase() {
        let base = reports[oldest]
        origin = (base.time, base.position)
        sums = Sums()
        for report in reports { sums.add(report.time - base.time, report.position - base.position, 1) }
        sinceRebase = 0
    }

    private func usableFit() -> Fit? {
        guard let fit = current, fit.kind != .contradicted, fit.span >= seconds(configuration.minimumSpan),
            fit.slopeError * 1e6 <= configuration.maximumUncertainty,
            abs(fit.slope - 1) * 1e6 <= configuration.plausibleRange
        else { return nil }
        return fit
    }

    private func fit() -> Fit? {
        fractional ? leastSquares() : interval()
    }

    /// Least squares of position on time over the reports kept.
    private func leastSquares() -> Fit? {
        guard reports.count >= 3, let origin, let last = newest else { return nil }
        let n = sums.n
        let meanT = sums.t / n, meanP = sums.p / n
        let stt = sums.tt - n * meanT * meanT
        let stp = sums.tp - n * meanT * meanP
        let spp = sums.pp - n * meanP * meanP
        guard stt > 1e-9 else { return nil }
        let slope = stp / stt
        // At least the positions' rounding: points that line up exactly are no surer than that.
        let variance = max((spp - slope * stp) / max(1, n - 2), 0.001 * 0.001 / 12)
        return Fit(
            kind: .leastSquares, origin: origin.time, intercept: origin.position + meanP - slope * meanT, slope: slope,
            slopeError: (variance / stt).squareRoot(), span: last.time - reports[oldest].time)
    }

    /// The rates and positions every whole-second report allows (see the type's description).
    ///
    /// A line `position = a + b·(t − origin)` fits report i when `a + b·xᵢ ≥ Nᵢ` at the answer's
    /// time and `a + b·x'ᵢ < Nᵢ + 1` at the question's. For a rate b, the intercepts allowed run
    /// from the largest `Nᵢ − b·xᵢ` to the smallest `Nᵢ + 1 − b·x'ᵢ`: that room is a concave
    /// function of b, and only the reports on the upper hull of the points (xᵢ, Nᵢ) and on the
    /// lower hull of (x'ᵢ, Nᵢ + 1) can bound it, so the hulls are all that is searched.
    private func interval() -> Fit? {
        guard reports.count >= 3, let last = newest, let origin = hullOrigin else { return nil }
        let base = reports[oldest]
        let range = configuration.plausibleRange * 2e-6
        func room(_ slope: Double) -> Double { ceilings.lowest(slope) - floors.highest(slope) }
        // The widest room: a ternary search on a concave function.
        var low = 1 - range, high = 1 + range
        // (2/3)⁴⁰ of 2 000 ppm: 0.02 ppm.
        for _ in 0..<40 {
            let third = (high - low) / 3
            if room(low + third) < room(high - third) { low += third } else { high -= third }
        }
        let best = (low + high) / 2
        let widest = room(best)
        // Reports that contradict each other by a little (positions older than said) make the
        // age they are given grow (``add``); by more, the device jumped or stalled.
        let tolerance = seconds(configuration.jumpThreshold) / 30
        guard widest > -tolerance else {
            return Fit(
                kind: .contradicted, origin: origin, intercept: base.position, slope: 1, slopeError: .infinity, span: last.time - base.time,
                inconsistency: -widest)
        }
        let floor = min(0, widest) - Self.agreement
        func edge(from inside: Double, to outside: Double) -> Double {
            var inside = inside, outside = outside
            for _ in 0..<40 {
                let middle = (inside + outside) / 2
                if room(middle) >= floor { inside = middle } else { outside = middle }
            }
            return inside
        }
        let lowest = edge(from: best, to: 1 - range), highest = edge(from: best, to: 1 + range)
        let slope = (lowest + highest) / 2
        let intercept = (floors.highest(slope) + ceilings.lowest(slope)) / 2
        return Fit(
            kind: .interval, origin: origin, intercept: intercept, slope: slope, slopeError: (highest - lowest) / 2, span: last.time - base.time,
            inconsistency: max(0, -widest))
    }

    private func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }
}

/// One side of a set of points' convex hull, the points coming in order of x: the upper side
/// answers the largest `y − slope·x` over all the points, the lower side the smallest. A point
/// costs amortised constant time; the chain holds only the points that can answer.
private struct ConvexChain: Sendable {
    let upper: Bool
    private var xs: [Double] = []
    private var ys: [Double] = []

    init(upper: Bool) { self.upper = upper }

    mutating func add(x: Double, y: Double) {
        while xs.count >= 2 {
            let n = xs.count
            let cross = (xs[n - 1] - xs[n - 2]) * (y - ys[n - 2]) - (ys[n - 1] - ys[n - 2]) * (x - xs[n - 2])
            // Upper: drop the last point when the new one is on or above the line through the two before.
            guard upper ? cross >= 0 : cross <= 0 else { break }
            xs.removeLast()
            ys.removeLast()
        }
        xs.append(x)
        ys.append(y)
    }

    /// The largest `y − slope·x` over the points (upper side).
    func highest(_ slope: Double) -> Double {
        var best = -Double.infinity
        for index in xs.indices { best = max(best, ys[index] - slope * xs[index]) }
        return best
    }

    /// The smallest `y − slope·x` over the points (lower side).
    func lowest(_ slope: Double) -> Double {
        var best = Double.infinity
        for index in xs.indices { best = min(best, ys[index] - slope * xs[index]) }
        return best
    }
}
