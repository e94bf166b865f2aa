/// Token buckets per source address under one bucket for all of them: a LAN host (or
/// many hosts, spoofed or not) gets a bounded share of the work, or of the bytes sent,
/// per second, whatever it sends.
///
/// The table of sources is bounded too: when it is full, sources whose bucket has
/// refilled (idle ones) are forgotten; if none has, a new source shares one overflow
/// bucket with every other newcomer, so that spoofing many addresses buys no more.
public struct SourceRateBudget: Sendable {
    /// A rate and the burst allowed above it, in the caller's unit (datagrams, records, bytes).
    public struct Rate: Sendable, Equatable {
        public var perSecond: Double
        public var burst: Double

        public init(perSecond: Double, burst: Double) {
            self.perSecond = perSecond
            self.burst = burst
        }
    }

    private struct Bucket {
        var tokens: Double
        var updated: Duration

        mutating func refill(at now: Duration, _ rate: Rate) {
            let elapsed = Double((now - updated).components.seconds) + Double((now - updated).components.attoseconds) / 1e18
            if elapsed > 0 {
                tokens = min(rate.burst, tokens + elapsed * rate.perSecond)
                updated = now
            }
        }
    }

    public let perSource: Rate
    public let overall: Rate
    public let maximumSources: Int
    private var sources: [String: Bucket] = [:]
    private var overflow: Bucket
    private var all: Bucket
    /// When idle sources were last looked for: at most once a second, so a stream of new
    /// (spoofed) sources into a full table costs no sweep per datagram.
    private var lastSweep: Duration?

    public init(perSource: Rate, overall: Rate, maximumSources: Int = 256) {
        self.perSource = perSource
        self.overall = overall
        self.maximumSources = max(1, maximumSources)
        overflow = Bucket(tokens: perSource.burst, updated: .zero)
        all = Bucket(tokens: overall.burst, updated: .zero)
    }

    /// Spends `cost` for `source` at `now`: false (and nothing spent) when the source's
    /// share or the overall one is used up.
    public mutating func spend(_ cost: Double, by source: String, now: Duration) -> Bool {
        all.refill(at: now, overall)
        guard all.tokens >= cost else { return false }
        if sources[source] == nil && sources.count >= maximumSources { forgetIdle(now: now) }
        if sources[source] == nil && sources.count < maximumSources {
            sources[source] = Bucket(tokens: perSource.burst, updated: now)
        }
        if var bucket = sources[source] {
            bucket.refill(at: now, perSource)
            guard bucket.tokens >= cost else { return false }
            bucket.tokens -= cost
            sources[source] = bucket
        } else {
            overflow.refill(at: now, perSource)
            guard overflow.tokens >= cost else { return false }
            overflow.tokens -= cost
        }
        all.tokens -= cost
        return true
    }

    /// Sources being tracked (for tests: the table stays within ``maximumSources``).
    public var trackedSources: Int { sources.count }

    private mutating func forgetIdle(now: Duration) {
        if let lastSweep, now - lastSweep < .seconds(1) { return }
        lastSweep = now
        let rate = perSource
        sources = sources.filter { _, bucket in
            var bucket = bucket
            bucket.refill(at: now, rate)
            return bucket.tokens < rate.burst
        }
    }
}
