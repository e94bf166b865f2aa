/// Counts the datagrams discovery ignores, by reason, and reports them in one log
/// line per period instead of one per datagram: anyone on the LAN can send
/// thousands a second, and a flood must cost a counter, not a log line (or a disk).
///
/// Nothing runs while nothing is ignored: the first datagram counted after a
/// report asks its owner to schedule the next one (no timer on a quiet network).
struct DatagramTally: Sendable {
    /// What the counts are of, for the report: `SSDP`, `mDNS`.
    let protocolName: String
    /// Since the last report, by reason.
    private(set) var pending: [String: Int] = [:]
    /// Since the start.
    private(set) var total = 0

    init(protocolName: String) {
        self.protocolName = protocolName
    }

    /// Counts `datagrams` (one unless told) for `reason`; true when they are the first since the last report.
    mutating func count(_ reason: String, datagrams: Int = 1) -> Bool {
        guard datagrams > 0 else { return false }
        total += datagrams
        let first = pending.isEmpty
        pending[reason, default: 0] += datagrams
        return first
    }

    /// Counts what `sockets` dropped before handing it over; true as ``count(_:datagrams:)``.
    mutating func count(droppedBy sockets: MulticastSockets) -> Bool {
        var first = false
        for (reason, datagrams) in sockets.takeDropped() where count(reason, datagrams: datagrams) { first = true }
        return first
    }

    /// The report of what was counted since the last one (nil when nothing was), and a fresh start.
    mutating func report() -> String? {
        guard !pending.isEmpty else { return nil }
        let count = pending.values.reduce(0, +)
        let reasons = pending.sorted { $0.value > $1.value || ($0.value == $1.value && $0.key < $1.key) }
            .map { "\($0.key): \($0.value)" }.joined(separator: ", ")
        pending = [:]
        return "\(protocolName): ignored \(count) datagram\(count == 1 ? "" : "s") (\(reasons)); \(total) since start"
    }
}
