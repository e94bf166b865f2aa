/// A time in NTP's format: seconds since 1900 in the upper 32 bits, the fraction in the lower.
public struct NTPTimestamp: Sendable, Hashable {
    public var seconds: UInt32
    public var fraction: UInt32

    public init(seconds: UInt32, fraction: UInt32) {
        self.seconds = seconds
        self.fraction = fraction
    }

    /// `nanoseconds` since the sender's epoch (any fixed instant: RAOP compares the sender's
    /// times only with each other), as NTP time.
    public init(nanoseconds: UInt64) {
        seconds = UInt32(truncatingIfNeeded: nanoseconds / 1_000_000_000)
        let remainder = nanoseconds % 1_000_000_000
        fraction = UInt32(truncatingIfNeeded: (remainder << 32) / 1_000_000_000)
    }

    var bytes: [UInt8] { bigEndian(seconds) + bigEndian(fraction) }

    init(_ bytes: ArraySlice<UInt8>) {
        let start = bytes.startIndex
        seconds = readBigEndian(bytes, start)
        fraction = readBigEndian(bytes, start + 4)
    }
}

func bigEndian(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)] }
func bigEndian(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(truncatingIfNeeded: value)] }

/// The four bytes at `index` as a big-endian number (the caller checked they are there).
func readBigEndian(_ bytes: ArraySlice<UInt8>, _ index: Int) -> UInt32 {
    UInt32(bytes[index]) << 24 | UInt32(bytes[index + 1]) << 16 | UInt32(bytes[index + 2]) << 8 | UInt32(bytes[index + 3])
}

/// The UDP packets of a RAOP stream (AirPlay 1).
public enum RAOPPacket {
    /// Payload type of audio (96), with the marker bit on the first packet of a stream.
    public static func audio(sequence: UInt16, timestamp: UInt32, ssrc: UInt32, first: Bool, payload: [UInt8]) -> [UInt8] {
        [0x80, first ? 0xE0 : 0x60] + bigEndian(sequence) + bigEndian(timestamp) + bigEndian(ssrc) + payload
    }

    /// A sync packet (to the receiver's control port): the frame `playingTimestamp` plays at
    /// `now`; `nextTimestamp` is the stream's position. With the flags of 7 the receiver adds
    /// its fixed 11 025 frames (0.25 s) to the difference, as it does for iTunes.
    public static func sync(playingTimestamp: UInt32, now: NTPTimestamp, nextTimestamp: UInt32, first: Bool) -> [UInt8] {
        [first ? 0x90 : 0x80, 0xD4, 0x00, 0x07] + bigEndian(playingTimestamp) + now.bytes + bigEndian(nextTimestamp)
    }

    /// The answer to a timing request: its transmit time as our origin, when we got it, and now.
    public static func timingReply(to request: TimingRequest, received: NTPTimestamp, transmitted: NTPTimestamp) -> [UInt8] {
        [0x80, 0xD3, 0x00, 0x07, 0, 0, 0, 0] + request.transmitted.bytes + received.bytes + transmitted.bytes
    }

    /// An audio packet sent again (to the receiver's control port), as it asked.
    public static func resent(_ packet: [UInt8]) -> [UInt8] {
        [0x80, 0xD6, 0x00, 0x01] + packet
    }
}

/// A receiver's timing request (to our timing port): its transmit time, which the reply echoes.
public struct TimingRequest: Sendable, Hashable {
    public var transmitted: NTPTimestamp

    /// Nil for anything that is not a 32-byte timing request.
    public init?(_ bytes: [UInt8]) {
        guard bytes.count >= 32, bytes[1] & 0x7F == 0x52 else { return nil }
        transmitted = NTPTimestamp(bytes[24..<32])
    }
}

/// A receiver's request to send packets again (to our control port).
public struct ResendRequest: Sendable, Hashable {
    public var first: UInt16
    public var count: UInt16

    /// Nil for anything that is not a resend request.
    public init?(_ bytes: [UInt8]) {
        guard bytes.count >= 8, bytes[1] & 0x7F == 0x55 else { return nil }
        first = UInt16(bytes[4]) << 8 | UInt16(bytes[5])
        count = UInt16(bytes[6]) << 8 | UInt16(bytes[7])
    }
}

/// ALAC frames without compression (the "escape" form every ALAC decoder reads): 16-bit
/// stereo, a whole frame of ``framesPerPacket`` samples or fewer for the last.
public enum ALACUncompressed {
    /// Frames in each RTP packet of a RAOP stream (what the SDP's fmtp announces).
    public static let framesPerPacket = 352

    /// One frame from interleaved stereo S16LE `pcm` (whole frames; a trailing partial frame is ignored).
    ///
    /// The bit layout: element tag 1 (a channel pair), instance 0, 12 unused bits, 1 (the
    /// sample count follows), 0 bytes shifted, 1 (not compressed), the count in 32 bits,
    /// then each frame's left and right samples, big-endian, and the end tag (7).
    public static func frame(stereoS16LE pcm: ArraySlice<UInt8>) -> [UInt8] {
        let frames = pcm.count / 4
        var writer = BitWriter()
        writer.write(1, bits: 3)
        writer.write(0, bits: 4)
        writer.write(0, bits: 12)
        writer.write(1, bits: 1)
        writer.write(0, bits: 2)
        writer.write(1, bits: 1)
        writer.write(UInt32(frames), bits: 32)
        var index = pcm.startIndex
        for _ in 0..<(frames * 2) {
            let sample = UInt16(pcm[index]) | UInt16(pcm[index + 1]) << 8
            writer.write(UInt32(sample), bits: 16)
            index += 2
        }
        writer.write(7, bits: 3)
        return writer.bytes
    }
}

/// Bits written most significant first; the last byte is padded with zeros.
struct BitWriter {
    private(set) var bytes: [UInt8] = []
    private var used = 8  // bits used in the last byte

    mutating func write(_ value: UInt32, bits: Int) {
        var remaining = bits
        while remaining > 0 {
            if used == 8 {
                bytes.append(0)
                used = 0
            }
            let take = min(8 - used, remaining)
            let chunk = UInt8(truncatingIfNeeded: (value >> UInt32(remaining - take)) & ((1 << UInt32(take)) - 1))
            bytes[bytes.count - 1] |= chunk << UInt8(8 - used - take)
            used += take
            remaining -= take
        }
    }
}

/// The ALAC stream's parameters, as the SDP's `fmtp` announces them to the receiver (the
/// fields of Apple's `ALACSpecificConfig`, in its order).
public struct ALACConfiguration: Sendable, Hashable {
    public var framesPerPacket: UInt32
    public var compatibleVersion: UInt8
    public var bitDepth: UInt8
    public var riceHistoryMultiplier: UInt8
    public var riceInitialHistory: UInt8
    public var riceLimit: UInt8
    public var channels: UInt8
    public var maxRun: UInt16
    public var maxFrameBytes: UInt32
    public var averageBitRate: UInt32
    public var sampleRate: UInt32

    /// What every RAOP sender announces: 352 frames of 16-bit stereo at 44.1 kHz, Apple's
    /// default Rice parameters (what the uncompressed frames are sent under).
    public static let standard = ALACConfiguration(
        framesPerPacket: UInt32(ALACUncompressed.framesPerPacket), compatibleVersion: 0, bitDepth: 16, riceHistoryMultiplier: 40,
        riceInitialHistory: 10, riceLimit: 14, channels: 2, maxRun: 255, maxFrameBytes: 0, averageBitRate: 0, sampleRate: 44_100)

    public init(
        framesPerPacket: UInt32, compatibleVersion: UInt8, bitDepth: UInt8, riceHistoryMultiplier: UInt8, riceInitialHistory: UInt8,
        riceLimit: UInt8, channels: UInt8, maxRun: UInt16, maxFrameBytes: UInt32, averageBitRate: UInt32, sampleRate: UInt32
    ) {
        self.framesPerPacket = framesPerPacket
        self.compatibleVersion = compatibleVersion
        self.bitDepth = bitDepth
        self.riceHistoryMultiplier = riceHistoryMultiplier
        self.riceInitialHistory = riceInitialHistory
        self.riceLimit = riceLimit
        self.channels = channels
        self.maxRun = maxRun
        self.maxFrameBytes = maxFrameBytes
        self.averageBitRate = averageBitRate
        self.sampleRate = sampleRate
    }

    /// The configuration in an encoder's magic cookie: the 24-byte `ALACSpecificConfig`,
    /// alone or inside its 36-byte `alac` atom (FFmpeg's extradata); nil for anything else.
    public init?(magicCookie bytes: [UInt8]) {
        var config = ArraySlice(bytes)
        if bytes.count >= 36, Array(bytes[4..<8]) == Array("alac".utf8) { config = bytes[12...] }
        guard config.count >= 24 else { return nil }
        let base = config.startIndex
        func u32(_ offset: Int) -> UInt32 {
            (0..<4).reduce(UInt32(0)) { $0 << 8 | UInt32(config[base + offset + $1]) }
        }
        self.init(
            framesPerPacket: u32(0), compatibleVersion: config[base + 4], bitDepth: config[base + 5], riceHistoryMultiplier: config[base + 6],
            riceInitialHistory: config[base + 7], riceLimit: config[base + 8], channels: config[base + 9],
            maxRun: UInt16(config[base + 10]) << 8 | UInt16(config[base + 11]), maxFrameBytes: u32(12), averageBitRate: u32(16),
            sampleRate: u32(20))
    }

    /// The `fmtp` attribute's value after the payload type.
    public var formatParameters: String {
        "\(framesPerPacket) \(compatibleVersion) \(bitDepth) \(riceHistoryMultiplier) \(riceInitialHistory) \(riceLimit) \(channels) \(maxRun) \(maxFrameBytes) \(averageBitRate) \(sampleRate)"
    }
}

/// The SDP of an ANNOUNCE: ALAC as `alac` describes it (352 frames a packet, 16-bit stereo
/// at 44.1 kHz), no encryption.
public func raopAnnouncement(
    sessionID: UInt32, senderAddress: String, receiverAddress: String, alac: ALACConfiguration = .standard
) -> [UInt8] {
    let ipVersion = senderAddress.contains(":") ? "IP6" : "IP4"
    let text = """
        v=0\r
        o=MediaRoute \(sessionID) 0 IN \(ipVersion) \(senderAddress)\r
        s=MediaRoute\r
        c=IN \(ipVersion) \(receiverAddress)\r
        t=0 0\r
        m=audio 0 RTP/AVP 96\r
        a=rtpmap:96 AppleLossless\r
        a=fmtp:96 \(alac.formatParameters)\r

        """
    return Array(text.utf8)
}

/// RAOP volume in dB (`SET_PARAMETER`, `volume: …`): −30 (quietest) to 0 (full), −144 for silence.
public func raopVolumeDecibels(_ fraction: Float) -> Float {
    guard fraction.isFinite, fraction > 0 else { return -144 }
    return -30 + 30 * min(fraction, 1)
}

/// The body of a volume `SET_PARAMETER`.
public func raopVolumeParameter(_ fraction: Float) -> [UInt8] {
    let decibels = raopVolumeDecibels(fraction)
    // Six decimals as iTunes writes them, without Foundation's formatting.
    let micro = Int((abs(decibels) * 1_000_000).rounded())
    let whole = micro / 1_000_000
    let fractionDigits = String(micro % 1_000_000)
    let padded = String(repeating: "0", count: 6 - fractionDigits.count) + fractionDigits
    return Array("volume: \(decibels < 0 ? "-" : "")\(whole).\(padded)\r\n".utf8)
}

/// What a receiver's `md` TXT key says it shows: 0 text, 1 artwork, 2 progress.
public struct RAOPMetadataTypes: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let text = RAOPMetadataTypes(rawValue: 1)
    public static let artwork = RAOPMetadataTypes(rawValue: 2)
    public static let progress = RAOPMetadataTypes(rawValue: 4)

    /// The types in `md` (`0,1,2`); unknown numbers are ignored, nil means none.
    public init(txt value: String?) {
        var types: RAOPMetadataTypes = []
        for item in value?.split(separator: ",") ?? [] {
            switch item.trimmingWhitespace {
            case "0": types.insert(.text)
            case "1": types.insert(.artwork)
            case "2": types.insert(.progress)
            default: continue
            }
        }
        self = types
    }
}

/// DAAP (DMAP-tagged) metadata of a `SET_PARAMETER` (`application/x-dmap-tagged`): one
/// listing item (`mlit`) with the title (`minm`), artist (`asar`) and album (`asal`) given.
/// Each text is cut to ``maximumTextBytes`` of UTF-8 at a character boundary.
public enum DAAPMetadata {
    public static let maximumTextBytes = 1024

    public static func listingItem(title: String?, artist: String?, album: String?) -> [UInt8] {
        var items: [UInt8] = []
        for (tag, text) in [("minm", title), ("asar", artist), ("asal", album)] {
            guard let text else { continue }
            items += element(tag, bounded(text))
        }
        return element("mlit", items)
    }

    /// A tag, its length (32 bits, big-endian) and its bytes.
    static func element(_ tag: String, _ bytes: [UInt8]) -> [UInt8] {
        let length = UInt32(clamping: bytes.count)
        return Array(tag.utf8.prefix(4)) + [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)] + bytes
    }

    static func bounded(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        for character in text {
            let utf8 = Array(String(character).utf8)
            guard bytes.count + utf8.count <= maximumTextBytes else { break }
            bytes += utf8
        }
        return bytes
    }
}

/// The body of a progress `SET_PARAMETER`: the RTP times of the track's start, of what plays
/// now, and of its end.
public func raopProgressParameter(start: UInt32, current: UInt32, end: UInt32) -> [UInt8] {
    Array("progress: \(start)/\(current)/\(end)\r\n".utf8)
}

/// The timing of an AirPlay 1 stream: how many frames after its sending a frame plays, made of
/// the sender's part (said in every sync packet) and the receiver's own fixed part (its
/// `Audio-Latency` in the answer to `RECORD`; 11 025 when it says none, as an AirPort Express).
public struct RAOPLatency: Sendable, Hashable {
    /// Frames between a packet's sending and its playing, as the sender wants it.
    public let total: UInt32
    /// The receiver's fixed part, at most ten seconds.
    public let receiver: UInt32

    public static let defaultReceiverFrames: UInt32 = 11_025

    public init(total: UInt32, receiverHeader: String?) {
        self.total = total
        let reported = receiverHeader.flatMap { UInt32(Substring($0).trimmingSpaces) } ?? Self.defaultReceiverFrames
        receiver = min(reported, 441_000)
    }

    /// The frame a sync packet says plays now when `position` is the stream's position: what
    /// the sender adds, so that with the receiver's part every receiver plays `total` frames
    /// after sending, whatever its own part. A receiver whose part is more than `total` plays
    /// late by the difference (``lateFrames``).
    public func playingTimestamp(position: UInt32) -> UInt32 {
        position &- (total - min(receiver, total))
    }

    /// How many frames later than `total` the receiver plays (its part is longer).
    public var lateFrames: UInt32 { receiver > total ? receiver - total : 0 }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var text = self
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        return text
    }
}
