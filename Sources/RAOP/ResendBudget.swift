import IPNetwork

/// How many packets a RAOP sender sends again for resend requests: a token bucket of
/// packets, and each packet at most twice a second.
///
/// A resend request is 8 bytes and names up to 65 535 packets of ~1.4 KB each, and its
/// source address is easily spoofed, so answering every request in full would make the
/// sender an amplifier towards the receiver's address. A receiver that really lost
/// packets asks for a few at a time; two seconds of audio (256 packets) is the most it
/// could ever use, and the budget is well above what real loss asks for.
public struct ResendBudget: Sendable {
    public let packetsPerSecond: Double
    public let burst: Double
    /// One bucket: every request comes from the one receiver (or claims to).
    private var tokens: SourceRateBudget
    /// The packets resent in the last second, with when.
    private var recent: [UInt16: (count: Int, since: Duration)] = [:]
    /// Packets resent and refused since the start (for tests and the stream's statistics).
    public private(set) var resent = 0
    public private(set) var refused = 0

    /// The most packets one request is answered with.
    public static let packetsPerRequest = 64

    public init(packetsPerSecond: Double = 32, burst: Double = 64) {
        self.packetsPerSecond = packetsPerSecond
        self.burst = burst
        let rate = SourceRateBudget.Rate(perSecond: packetsPerSecond, burst: burst)
        tokens = SourceRateBudget(perSource: rate, overall: rate, maximumSources: 1)
    }

    /// The sequence numbers of `request` to send again at `now` (each within the budget);
    /// those beyond it are refused.
    public mutating func allow(_ request: ResendRequest, now: Duration, isKept: (UInt16) -> Bool) -> [UInt16] {
        if recent.count > 512 { recent = recent.filter { now - $0.value.since < .seconds(1) } }
        var allowed: [UInt16] = []
        for offset in 0..<min(Int(request.count), Self.packetsPerRequest) {
            let sequence = request.first &+ UInt16(offset)
            guard isKept(sequence) else { continue }
            var seen: (count: Int, since: Duration) = recent[sequence].flatMap { now - $0.since < .seconds(1) ? $0 : nil } ?? (0, now)
            guard seen.count < 2, tokens.spend(1, by: "receiver", now: now) else {
                refused += 1
                continue
            }
            seen.count += 1
            recent[sequence] = seen
            allowed.append(sequence)
        }
        resent += allowed.count
        return allowed
    }
}
