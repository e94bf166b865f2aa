#if canImport(Glibc)
import Glibc
#endif

/// A buffer of media samples on its way to a device.
public struct SampleBuffer: Sendable, Hashable {
    /// How the samples are encoded.
    public struct Format: Sendable, Hashable, Codable {
        public enum Encoding: String, Sendable, Hashable, Codable {
            /// Interleaved signed 16-bit little-endian PCM.
            case pcmS16LE
            /// Interleaved 32-bit float PCM.
            case pcmF32LE
            /// Already-encoded frames (e.g. ALAC, H.264), opaque to the system.
            case encoded
        }

        public var encoding: Encoding
        public var sampleRate: Int
        public var channels: Int

        public init(encoding: Encoding, sampleRate: Int, channels: Int) {
            self.encoding = encoding
            self.sampleRate = sampleRate
            self.channels = channels
        }

        /// CD-quality stereo PCM.
        public static let cdAudio = Format(encoding: .pcmS16LE, sampleRate: 44_100, channels: 2)
    }

    public var format: Format
    /// When the delivery's clock reached the first frame, on CLOCK_MONOTONIC (as a duration since
    /// boot); the device adds its own latency. Buffers of one stream advance by their length;
    /// buffers handed to several devices by one delivery (a group) carry the same time, so
    /// devices that schedule playback themselves (AirPlay) play them at the same instant.
    public var presentationTime: Duration
    /// Number of frames (one sample per channel) in ``data``.
    public var frameCount: Int
    public var data: [UInt8]

    /// Now on the clock of ``presentationTime`` (CLOCK_MONOTONIC, as a duration since boot).
    public static func clockNow() -> Duration {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }

    public init(format: Format, presentationTime: Duration, frameCount: Int, data: [UInt8]) {
        self.format = format
        self.presentationTime = presentationTime
        self.frameCount = frameCount
        self.data = data
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
