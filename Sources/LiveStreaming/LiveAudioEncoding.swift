/// How a live audio stream is put on the wire for a device that fetches it over HTTP.
///
/// Ordered by the latency they allow: LPCM and WAV are the samples themselves (a renderer
/// that fills its buffer by bytes starts soonest on them), FLAC is lossless at about half
/// the bytes but each frame waits for its 1 152 samples, and MP3 and AAC (for devices that
/// take nothing else) wait as long and their encoders hold their first frames back besides.
public enum LiveAudioEncoding: String, Sendable, CaseIterable, CustomStringConvertible {
    /// DLNA's LPCM: `audio/L16;rate=…;channels=…`, 16-bit big-endian samples, no header.
    case lpcm
    /// RIFF/WAVE, 16-bit little-endian samples after a header whose sizes say "unbounded".
    case wav
    /// FLAC (`audio/flac`): lossless at about half the bytes, for devices that list no PCM;
    /// FFmpeg's encoder (``FLACLiveEncoder``), each frame a place a device may start.
    case flac
    /// MP3 (`audio/mpeg`) at 320 kbit/s, for devices that list none of the above; FFmpeg's
    /// `libmp3lame` (``MP3LiveEncoder``), each frame a place a device may start.
    case mp3
    /// AAC-LC in ADTS (`audio/aac`) at 256 kbit/s, for devices that list AAC and none of the
    /// above; FFmpeg's native encoder (``AACLiveEncoder``), each frame a place a device may start.
    case aac

    public var description: String { rawValue }

    /// The codec's name in a route's status.
    public var codecName: String {
        switch self {
        case .lpcm: "LPCM"
        case .wav: "WAV"
        case .flac: "FLAC"
        case .mp3: "MP3"
        case .aac: "AAC"
        }
    }

    /// The preference when a device takes several: the lowest latency first.
    public static let latencyOrder: [LiveAudioEncoding] = [.lpcm, .wav, .flac, .mp3, .aac]

    /// The Content-Type of a stream of `channels` at `sampleRate`.
    public func mimeType(sampleRate: Int, channels: Int) -> String {
        switch self {
        case .lpcm: "audio/L16;rate=\(sampleRate);channels=\(channels)"
        case .wav: "audio/wav"
        case .flac: "audio/flac"
        case .mp3: "audio/mpeg"
        case .aac: "audio/aac"
        }
    }

    /// The DLNA media format profile (`DLNA.ORG_PN`), where the stream is one: LPCM is defined
    /// for 44.1 and 48 kHz, mono or stereo, MP3 for MPEG-1 Layer III (32, 44.1, 48 kHz); WAV
    /// and FLAC have none.
    public func dlnaProfile(sampleRate: Int, channels: Int) -> String? {
        switch self {
        case .lpcm: [44_100, 48_000].contains(sampleRate) && (1...2).contains(channels) ? "LPCM" : nil
        case .mp3: [32_000, 44_100, 48_000].contains(sampleRate) && (1...2).contains(channels) ? "MP3" : nil
        case .aac: [32_000, 44_100, 48_000].contains(sampleRate) && (1...2).contains(channels) ? "AAC_ADTS_320" : nil
        case .wav, .flac: nil
        }
    }

    /// The bytes of one PCM frame on the wire (the samples FLAC encodes, for FLAC).
    public func bytesPerFrame(channels: Int) -> Int { 2 * channels }

    /// Whether the bytes on the wire are the samples at a constant rate (not FLAC's or MP3's frames).
    public var isPCM: Bool { self == .lpcm || self == .wav }

    /// The file name extension of a stream in this encoding.
    public var fileExtension: String {
        switch self {
        case .lpcm: "pcm"
        case .wav: "wav"
        case .flac: "flac"
        case .mp3: "mp3"
        case .aac: "aac"
        }
    }

    /// Whether `mimeType` (a sink a device lists, lower-cased, with its parameters) takes
    /// this encoding at `sampleRate` and `channels`. Parameters a device leaves out match any.
    public func isTaken(by mimeType: String, sampleRate: Int, channels: Int) -> Bool {
        let parts = mimeType.lowercased().split(separator: ";").map { $0.trimmingSpaces }
        guard let type = parts.first else { return false }
        switch self {
        case .lpcm:
            guard type == "audio/l16" else { return false }
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingSpaces }
                guard pair.count == 2 else { continue }
                if pair[0] == "rate", Int(pair[1]) != sampleRate { return false }
                if pair[0] == "channels", Int(pair[1]) != channels { return false }
            }
            return true
        case .wav:
            return ["audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave"].contains(type)
        case .flac:
            return type == "audio/flac" || type == "audio/x-flac"
        case .mp3:
            return type == "audio/mpeg" || type == "audio/mp3" || type == "audio/x-mpeg"
        case .aac:
            return ["audio/aac", "audio/x-aac", "audio/aacp", "audio/vnd.dlna.adts"].contains(type)
        }
    }

    /// The first encoding of `preference` that one of `offered` takes; nil when none.
    public static func choose(
        from offered: [String], sampleRate: Int, channels: Int, preference: [LiveAudioEncoding] = latencyOrder
    ) -> LiveAudioEncoding? {
        preference.first { encoding in offered.contains { encoding.isTaken(by: $0, sampleRate: sampleRate, channels: channels) } }
    }

    /// The bytes every reader gets first: a WAV header whose sizes are the largest a RIFF file
    /// can say (decoders read such a header as "until the stream ends"); nothing for LPCM; for
    /// FLAC the encoder's (``FLACLiveEncoder/header``).
    public func header(sampleRate: Int, channels: Int) -> [UInt8] {
        guard self == .wav else { return [] }
        func le32(_ value: UInt32) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 24)] }
        func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
        let blockAlign = UInt16(2 * channels)
        return Array("RIFF".utf8) + le32(0xFFFF_FFFF) + Array("WAVEfmt ".utf8) + le32(16) + le16(1) + le16(UInt16(channels))
            + le32(UInt32(sampleRate)) + le32(UInt32(sampleRate) * UInt32(blockAlign)) + le16(blockAlign) + le16(16)
            + Array("data".utf8) + le32(0xFFFF_FFFF)
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var text = self
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        return text
    }
}
