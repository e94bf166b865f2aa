import IPNetwork

/// How many requests an AirPlay 2 receiver's event channel is answered: a token bucket of
/// ``burst`` requests refilled at ``requestsPerSecond``. Each request costs a decryption, a
/// parse, an encrypted answer and a write; a receiver says a few things at a session's start
/// and when its remote is used, so a channel over the budget is a receiver (or an impostor of
/// one) flooding us, and it is closed — the stream plays on without it.
public struct EventChannelBudget: Sendable {
    public let requestsPerSecond: Double
    public let burst: Double
    private var tokens: SourceRateBudget
    /// Requests answered so far.
    public private(set) var answered = 0

    public init(requestsPerSecond: Double = 8, burst: Double = 32) {
        self.requestsPerSecond = requestsPerSecond
        self.burst = burst
        let rate = SourceRateBudget.Rate(perSecond: requestsPerSecond, burst: burst)
        tokens = SourceRateBudget(perSource: rate, overall: rate, maximumSources: 1)
    }

    /// Whether one more request at `now` is within the budget (and so is answered).
    public mutating func allow(now: Duration) -> Bool {
        guard tokens.spend(1, by: "receiver", now: now) else { return false }
        answered += 1
        return true
    }
}
