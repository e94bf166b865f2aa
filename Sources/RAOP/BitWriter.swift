

func bigEndian(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)] }

func bigEndian(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(truncatingIfNeeded: value)] }
func bigEndian(_ value: UInt64) -> [UInt8] { bigEndian(UInt32(value >> 32)) + bigEndian(UInt32(truncatingIfNeeded: value)) }

/// The four bytes at `index` as a big-endian number (the caller checked they are there).
func readBigEndian(_ bytes: ArraySlice<UInt8>, _ index: Int) -> UInt32 {
    UInt32(bytes[index]) << 24 | UInt32(bytes[index + 1]) << 16 | UInt32(bytes[index + 2]) << 8 | UInt32(bytes[index + 3])
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

/// The body of a progress `SET_PARAMETER`: the RTP times of the track's start, of what plays
/// now, and of its end.
public func raopProgressParameter(start: UInt32, current: UInt32, end: UInt32) -> [UInt8] {
    Array("progress: \(start)/\(current)/\(end)\r\n".utf8)
}

extension Substring {
    var trimmingSpaces: Substring {
        var text = self
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        return text
    }
}
