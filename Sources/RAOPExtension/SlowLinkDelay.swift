/// How late a receiver that follows our PTP master reads our clock: nqptp measures no path
/// delay, so it takes our clock to be the one-way delay behind, and plays that much late. On a
/// slow link — the least of the last round trips of the stream's `/feedback` requests (at
/// least ``minimumSamples``) is ``slowRoundTrip`` or more — half that round trip; on a LAN
/// (well under 2 ms) nothing, as the receiver's own processing would be most of a round trip.
/// A link slower one way than the other is beyond this (`[audio] group-offsets`).
struct SlowLinkDelay: Sendable {
    static let slowRoundTrip: Duration = .milliseconds(2)
    static let minimumSamples = 4
    static let samplesKept = 16
    private var roundTrips: [Duration] = []

    mutating func note(_ roundTrip: Duration) {
        guard roundTrip >= .zero else { return }
        roundTrips.append(roundTrip)
        if roundTrips.count > Self.samplesKept { roundTrips.removeFirst() }
    }

    var oneWay: Duration {
        guard roundTrips.count >= Self.minimumSamples, let least = roundTrips.min(), least >= Self.slowRoundTrip else { return .zero }
        return least / 2
    }
}
