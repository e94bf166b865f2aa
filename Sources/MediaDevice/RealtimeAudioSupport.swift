public import RoutingModel

/// The real-time audio a route takes, as an extension declares it for a session.
///
/// The system checks an app's requested format against it before any sample moves,
/// so a format the device cannot play is a typed error naming what it takes, not
/// noise at the speaker.
public struct RealtimeAudioSupport: Sendable, Hashable, CustomStringConvertible {
    /// The PCM encodings taken (``SampleBuffer/Format/Encoding/encoded`` is never offered to apps).
    public var encodings: Set<SampleBuffer.Format.Encoding>
    /// Frames per second taken.
    public var sampleRates: Set<Int>
    /// Channel counts taken.
    public var channels: ClosedRange<Int>
    /// The buffering the device and its link add between a delivered sample and its sound.
    public var latency: Duration
    /// How often the device takes samples, when not as often as delivery's default (20 ms):
    /// a URL device fetches a live stream it buffers by a second or so, an A2DP speaker plays
    /// packets as they come from a buffer of 100–200 ms, and fewer, larger hand-overs cost
    /// fewer wake-ups (delivery then reads only on its ticks). A group runs at its members'
    /// shortest. `latency` is measured with this period.
    public var deliveryPeriod: Duration?

    public init(
        encodings: Set<SampleBuffer.Format.Encoding>, sampleRates: Set<Int>, channels: ClosedRange<Int>, latency: Duration,
        deliveryPeriod: Duration? = nil
    ) {
        self.encodings = encodings
        self.sampleRates = sampleRates
        self.channels = channels
        self.latency = latency
        self.deliveryPeriod = deliveryPeriod
    }

    /// S16LE or F32LE at 44.1 or 48 kHz, mono or stereo: what every extension converts from.
    public static let standard = RealtimeAudioSupport(
        encodings: [.pcmS16LE, .pcmF32LE], sampleRates: [44_100, 48_000], channels: 1...2, latency: .zero)

    /// Whether `format` is one of the formats taken.
    public func accepts(_ format: SampleBuffer.Format) -> Bool {
        encodings.contains(format.encoding) && sampleRates.contains(format.sampleRate) && channels.contains(format.channels)
    }

    public var description: String {
        let names = [SampleBuffer.Format.Encoding.pcmS16LE, .pcmF32LE].filter(encodings.contains).compactMap(\.pcmName).joined(separator: " or ")
        let rates = sampleRates.sorted().map(String.init).joined(separator: " or ")
        let counts = channels.lowerBound == channels.upperBound ? "\(channels.lowerBound)" : "\(channels.lowerBound)-\(channels.upperBound)"
        return "\(names), \(rates) Hz, \(counts) channel\(channels.upperBound == 1 ? "" : "s")"
    }
}
