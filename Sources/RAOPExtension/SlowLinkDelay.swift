/// How late a receiver that follows our PTP master reads our clock: nqptp measures no path
/// delay, so it takes our clock to be the one-way delay behind, and plays that much late. On a
/// slow link — the least round trip the kernel measured on the RTSP connection is
/// ``slowRoundTrip`` or more — half that round trip; on a LAN (well under 2 ms) nothing.
///
/// The kernel's measure (``Transport/ByteStream/leastRoundTrip()``, TCP's minimum RTT) is
/// answered by the receiver's network stack, so the time the receiver takes to answer a request
/// is not in it. Timing RTSP requests instead took that time for the link: under load a receiver
/// that answered in 2 ms was taken to be 1 ms away, and played 1 ms early beside an AirPlay 1
/// receiver (CI of 574dd57). A link slower one way than the other is beyond this
/// (`[audio] group-offsets`).
enum SlowLinkDelay {
    static let slowRoundTrip: Duration = .milliseconds(2)

    /// What to take off the times for a least round trip of `leastRoundTrip` (nil: unknown, nothing).
    static func oneWay(leastRoundTrip: Duration?) -> Duration {
        guard let leastRoundTrip, leastRoundTrip >= slowRoundTrip else { return .zero }
        return leastRoundTrip / 2
    }
}
