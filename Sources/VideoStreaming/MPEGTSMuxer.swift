/// An MPEG-2 transport stream (ISO/IEC 13818-1) of one H.264 video stream, and with
/// ``carriesAudio`` one AAC audio stream in ADTS beside it, for renderers and TVs that play
/// `video/mpeg` over HTTP.
///
/// Each access unit becomes one PES packet (behind an access unit delimiter, as H.264 in TS
/// requires) cut into 188-byte packets; its first packet carries the PCR, a little before the
/// picture's presentation time, and marks random access at an IDR. The PAT and PMT come before
/// every IDR, so a reader that starts there has all it needs to decode.
public struct MPEGTSMuxer: Sendable {
    public static let packetSize = 188
    /// The program's PIDs.
    public static let pmtPID: UInt16 = 0x1000
    public static let videoPID: UInt16 = 0x0100
    public static let audioPID: UInt16 = 0x0101
    /// AAC in ADTS (ISO/IEC 13818-7 audio with ADTS transport syntax, table 2-34).
    static let adtsStreamType: UInt8 = 0x0F
    /// The program has an audio stream (its PMT lists it from the first packet on).
    public let carriesAudio: Bool
    /// H.264 video (ISO/IEC 13818-1 table 2-34).
    static let h264StreamType: UInt8 = 0x1B
    /// How far the PCR runs ahead of presentation: what a decoder buffers before it shows a
    /// picture. Small, for latency: baseline H.264 has no reordering to wait for.
    public var pcrLead: Duration
    private var continuity: [UInt16: UInt8] = [:]
    /// 90 kHz ticks added to every timestamp, so the PCR before the first picture is positive.
    static let timestampOrigin: UInt64 = 90_000

    public init(pcrLead: Duration = .milliseconds(100), carriesAudio: Bool = false) {
        self.pcrLead = pcrLead
        self.carriesAudio = carriesAudio
    }

    /// The packets of one access unit (Annex B), PAT and PMT first at an IDR.
    public mutating func packets(accessUnit: [UInt8], isIDR: Bool, presentationTime: Duration) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity((accessUnit.count / 184 + 4) * Self.packetSize)
        if isIDR {
            section(Self.patSection(), pid: 0, into: &out)
            section(Self.pmtSection(audio: carriesAudio), pid: Self.pmtPID, into: &out)
        }
        let pts = Self.ticks(presentationTime)
        let pcr = (pts &- Self.ticks(pcrLead) &+ Self.timestampOrigin) & Self.mask33
        var pes: [UInt8] = [0x00, 0x00, 0x01, 0xE0, 0x00, 0x00, 0x84, 0x80, 0x05]
        pes += Self.timestamp((pts &+ Self.timestampOrigin) & Self.mask33, prefix: 0x20)
        pes += [0x00, 0x00, 0x00, 0x01, 0x09, 0xF0]  // access unit delimiter: any slice type
        pes += accessUnit
        // The PES length is zero (unbounded, allowed for video) when it would not fit 16 bits.
        let length = pes.count - 6
        if length <= 0xFFFF {
            pes[4] = UInt8(length >> 8)
            pes[5] = UInt8(length & 0xFF)
        }
        packetize(pes, pid: Self.videoPID, pcr: pcr, randomAccess: isIDR, into: &out)
        return out
    }

    /// The packets of AAC frames in ADTS (one or more, the first due at `presentationTime`) as
    /// one PES packet of the audio stream. Empty when the program carries no audio.
    public mutating func audioPackets(adts frames: [UInt8], presentationTime: Duration) -> [UInt8] {
        guard carriesAudio, !frames.isEmpty else { return [] }
        let pts = (Self.ticks(presentationTime) &+ Self.timestampOrigin) & Self.mask33
        var pes: [UInt8] = [0x00, 0x00, 0x01, 0xC0, 0x00, 0x00, 0x84, 0x80, 0x05]
        pes += Self.timestamp(pts, prefix: 0x20)
        pes += frames
        let length = pes.count - 6
        if length <= 0xFFFF {
            pes[4] = UInt8(length >> 8)
            pes[5] = UInt8(length & 0xFF)
        }
        var out: [UInt8] = []
        out.reserveCapacity((pes.count / 184 + 1) * Self.packetSize)
        packetize(pes, pid: Self.audioPID, pcr: nil, randomAccess: false, into: &out)
        return out
    }

    static let mask33: UInt64 = (1 << 33) - 1

    /// 90 kHz ticks of `time` (negative times count as zero).
    static func ticks(_ time: Duration) -> UInt64 {
        let microseconds = time / .microseconds(1)
        return microseconds <= 0 ? 0 : UInt64(microseconds) * 9 / 100
    }

    /// A PTS or DTS field: 33 bits in five bytes with marker bits.
    static func timestamp(_ value: UInt64, prefix: UInt8) -> [UInt8] {
        [
            prefix | UInt8((value >> 29) & 0x0E) | 1, UInt8((value >> 22) & 0xFF), UInt8((value >> 14) & 0xFE) | 1,
            UInt8((value >> 7) & 0xFF), UInt8((value << 1) & 0xFE) | 1,
        ]
    }

    private mutating func nextContinuity(_ pid: UInt16) -> UInt8 {
        let value = continuity[pid, default: 0]
        continuity[pid] = (value + 1) & 0x0F
        return value
    }

    /// `payload` in packets of `pid`; the first with the PCR (when given) and the random-access flag.
    private mutating func packetize(_ payload: [UInt8], pid: UInt16, pcr: UInt64?, randomAccess: Bool, into out: inout [UInt8]) {
        var offset = 0
        var first = true
        while offset < payload.count {
            // The adaptation field this packet needs before stuffing: flags and PCR on the first.
            let needed = first && (pcr != nil || randomAccess) ? (pcr != nil ? 8 : 2) : 0
            let chunk = min(payload.count - offset, 184 - needed)
            let adaptation = 184 - chunk  // bytes of adaptation field, stuffing included
            out.append(0x47)
            out.append((first ? 0x40 : 0x00) | UInt8(pid >> 8))
            out.append(UInt8(pid & 0xFF))
            out.append((adaptation > 0 ? 0x30 : 0x10) | nextContinuity(pid))
            if adaptation > 0 {
                out.append(UInt8(adaptation - 1))
                if adaptation > 1 {
                    var flags: UInt8 = 0
                    if first && randomAccess { flags |= 0x40 }
                    if first, pcr != nil { flags |= 0x10 }
                    out.append(flags)
                    var used = 2
                    if first, let pcr {
                        out += [UInt8((pcr >> 25) & 0xFF), UInt8((pcr >> 17) & 0xFF), UInt8((pcr >> 9) & 0xFF), UInt8((pcr >> 1) & 0xFF), UInt8((pcr & 1) << 7) | 0x7E, 0x00]
                        used += 6
                    }
                    out += [UInt8](repeating: 0xFF, count: adaptation - used)
                }
            }
            out += payload[offset..<(offset + chunk)]
            offset += chunk
            first = false
        }
    }

    /// A PSI section in one packet (pointer field first, the rest stuffed).
    private mutating func section(_ section: [UInt8], pid: UInt16, into out: inout [UInt8]) {
        out += [0x47, 0x40 | UInt8(pid >> 8), UInt8(pid & 0xFF), 0x10 | nextContinuity(pid), 0x00]
        out += section
        out += [UInt8](repeating: 0xFF, count: 183 - section.count)
    }

    static func patSection() -> [UInt8] {
        var body: [UInt8] = [0x00, 0x01, 0xC1, 0x00, 0x00]  // transport stream 1, version 0, current; section 0 of 0
        body += [0x00, 0x01, 0xE0 | UInt8(pmtPID >> 8), UInt8(pmtPID & 0xFF)]  // program 1 → PMT
        return withHeaderAndCRC(tableID: 0x00, body)
    }

    static func pmtSection(audio: Bool = false) -> [UInt8] {
        var body: [UInt8] = [0x00, 0x01, 0xC1, 0x00, 0x00]  // program 1, version 0, current; section 0 of 0
        body += [0xE0 | UInt8(videoPID >> 8), UInt8(videoPID & 0xFF), 0xF0, 0x00]  // PCR PID; no program descriptors
        body += [h264StreamType, 0xE0 | UInt8(videoPID >> 8), UInt8(videoPID & 0xFF), 0xF0, 0x00]
        if audio { body += [adtsStreamType, 0xE0 | UInt8(audioPID >> 8), UInt8(audioPID & 0xFF), 0xF0, 0x00] }
        return withHeaderAndCRC(tableID: 0x02, body)
    }

    private static func withHeaderAndCRC(tableID: UInt8, _ body: [UInt8]) -> [UInt8] {
        let length = body.count + 4
        var section: [UInt8] = [tableID, 0xB0 | UInt8(length >> 8), UInt8(length & 0xFF)] + body
        let crc = crc32(section)
        section += [UInt8(crc >> 24), UInt8((crc >> 16) & 0xFF), UInt8((crc >> 8) & 0xFF), UInt8(crc & 0xFF)]
        return section
    }

    /// MPEG-2's CRC-32 (polynomial 0x04C11DB7, most significant bit first, no final inversion).
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte) << 24
            for _ in 0..<8 { crc = crc & 0x8000_0000 != 0 ? (crc << 1) ^ 0x04C1_1DB7 : crc << 1 }
        }
        return crc
    }
}
