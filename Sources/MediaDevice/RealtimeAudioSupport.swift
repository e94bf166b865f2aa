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

    public init(encodings: Set<SampleBuffer.Format.Encoding>, sampleRates: Set<Int>, channels: ClosedRange<Int>, latency: Duration) {
        self.encodings = encodings
        self.sampleRates = sampleRates
        self.channels = channels
        self.latency = latency
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

extension SampleBuffer.Format.Encoding {
    /// The name tools use for the encoding (`s16le`, `f32le`); nil for encoded frames.
    public var pcmName: String? {
        switch self {
        case .pcmS16LE: "s16le"
        case .pcmF32LE: "f32le"
        case .encoded: nil
        }
    }

    /// The encoding a tool name stands for (`s16le`, `f32le`, case-insensitive).
    public init?(pcmName: String) {
        switch pcmName.lowercased() {
        case "s16le", "s16": self = .pcmS16LE
        case "f32le", "f32", "float": self = .pcmF32LE
        default: return nil
        }
    }

    /// Bytes per sample of one channel; nil for encoded frames.
    public var bytesPerSample: Int? {
        switch self {
        case .pcmS16LE: 2
        case .pcmF32LE: 4
        case .encoded: nil
        }
    }
}

extension SampleBuffer.Format {
    /// The format as the D-Bus API and `mediaroutectl` write it: `s16le/44100/2`.
    public var name: String {
        "\(encoding.pcmName ?? "encoded")/\(sampleRate)/\(channels)"
    }

    /// The PCM format `name` (`s16le/44100/2`) stands for; nil for anything else.
    public init?(name: String) {
        let parts = name.split(separator: "/")
        guard parts.count == 3, let encoding = Encoding(pcmName: String(parts[0])),
            let rate = Int(parts[1]), (1...384_000).contains(rate), let channels = Int(parts[2]), (1...8).contains(channels)
        else { return nil }
        self.init(encoding: encoding, sampleRate: rate, channels: channels)
    }

    /// Bytes per frame (one sample of every channel); nil for encoded frames or a count out of range.
    public var bytesPerFrame: Int? {
        guard let size = encoding.bytesPerSample, (1...8).contains(channels) else { return nil }
        return size * channels
    }
}
