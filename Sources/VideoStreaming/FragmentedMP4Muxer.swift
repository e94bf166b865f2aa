/// Fragmented MP4 (ISO/IEC 14496-12, H.264 per 14496-15) of one video track, as a live stream
/// for receivers that play `video/mp4` (Cast's Default Media Receiver, browsers): an
/// initialization segment (`ftyp`, `moov` with the SPS and PPS in `avcC`) that every reader gets
/// first, then one fragment (`moof` + `mdat`) per picture, so a picture leaves as it is encoded.
///
/// Samples are NAL units behind 4-byte lengths; parameter sets and access unit delimiters are
/// left out of them (the `avcC` has the parameter sets, which stay the same for the stream).
/// With an audio track (a route's audio beside its pictures) the `moov` has a second track,
/// AAC-LC (`mp4a`, its AudioSpecificConfig in `esds`), whose frames come in fragments of their own
/// (``audioFragment(frames:decodeTime:)``), timed in samples at the audio's rate.
public struct FragmentedMP4Muxer: Sendable {
    /// Media time units per second (MPEG's 90 kHz, as the transport stream's).
    public static let timescale: UInt32 = 90_000
    let frameTicks: UInt32
    private var sequence: UInt32 = 0

    public init(frameDuration: Duration) {
        frameTicks = UInt32(clamping: MPEGTSMuxer.ticks(frameDuration))
    }

    /// The audio track: AAC-LC at `sampleRate` (an ADTS frequency index) with `channels`.
    public struct AudioTrack: Sendable, Hashable {
        public var sampleRate: Int
        public var channels: Int
        public init(sampleRate: Int, channels: Int) {
            self.sampleRate = sampleRate
            self.channels = channels
        }
    }

    /// `ftyp` and `moov` for pictures of `width`×`height` whose parameter sets are `parameterSets`
    /// (Annex B), and `audio` as a second track.
    public static func initializationSegment(width: Int, height: Int, parameterSets: [UInt8], audio: AudioTrack? = nil) -> [UInt8]? {
        let units = H264Encoder.nalUnits(parameterSets)
        guard let sps = units.first(where: { $0.first.map { $0 & 0x1F == 7 } ?? false }), sps.count >= 4,
            let pps = units.first(where: { $0.first.map { $0 & 0x1F == 8 } ?? false }), sps.count <= 0xFFFF, pps.count <= 0xFFFF
        else { return nil }
        let spsBytes = Array(sps)
        let ftyp = box("ftyp", Array("isom".utf8) + be32(0x200) + Array("isomiso2avc1mp41iso6".utf8))
        let matrix: [UInt8] = be32(0x0001_0000) + be32(0) + be32(0) + be32(0) + be32(0x0001_0000) + be32(0) + be32(0) + be32(0) + be32(0x4000_0000)
        let mvhd = fullBox(
            "mvhd", 0, 0, be32(0) + be32(0) + be32(1000) + be32(0) + be32(0x0001_0000) + [0x01, 0x00] + zeros(10) + matrix + zeros(24) + be32(audio == nil ? 2 : 3))
        let tkhd = fullBox(
            "tkhd", 0, 3,
            be32(0) + be32(0) + be32(1) + zeros(4) + be32(0) + zeros(8) + [0, 0, 0, 0, 0, 0, 0, 0] + matrix + be32(UInt32(width) << 16) + be32(UInt32(height) << 16))
        let mdhd = fullBox("mdhd", 0, 0, be32(0) + be32(0) + be32(timescale) + be32(0) + [0x55, 0xC4, 0, 0])
        let hdlr = fullBox("hdlr", 0, 0, be32(0) + Array("vide".utf8) + zeros(12) + Array("MediaRoute video\0".utf8))
        let vmhd = fullBox("vmhd", 0, 1, zeros(8))
        let dinf = box("dinf", fullBox("dref", 0, 0, be32(1) + fullBox("url ", 0, 1, [])))
        let avcC = box(
            "avcC",
            [1, spsBytes[1], spsBytes[2], spsBytes[3], 0xFF, 0xE1] + be16(UInt16(sps.count)) + spsBytes + [1] + be16(UInt16(pps.count)) + Array(pps))
        var avc1: [UInt8] = zeros(6) + be16(1) + zeros(16) + be16(UInt16(width)) + be16(UInt16(height))
        avc1 += be32(0x0048_0000) + be32(0x0048_0000) + be32(0) + be16(1) + zeros(32) + be16(0x18) + [0xFF, 0xFF] + avcC
        let stsd = fullBox("stsd", 0, 0, be32(1) + box("avc1", avc1))
        let stbl = box(
            "stbl",
            stsd + fullBox("stts", 0, 0, be32(0)) + fullBox("stsc", 0, 0, be32(0)) + fullBox("stsz", 0, 0, be32(0) + be32(0)) + fullBox("stco", 0, 0, be32(0)))
        let minf = box("minf", vmhd + dinf + stbl)
        let trak = box("trak", tkhd + box("mdia", mdhd + hdlr + minf))
        var traks = trak
        var trex = fullBox("trex", 0, 0, be32(1) + be32(1) + be32(0) + be32(0) + be32(0))
        if let audio {
            guard let audioTrak = audioTrack(audio, matrix: matrix, dinf: dinf) else { return nil }
            traks += audioTrak
            trex += fullBox("trex", 0, 0, be32(2) + be32(1) + be32(0) + be32(0) + be32(0))
        }
        return ftyp + box("moov", mvhd + traks + box("mvex", trex))
    }

    /// The `trak` of AAC-LC audio (track 2): `mp4a` with an `esds` holding its AudioSpecificConfig.
    static func audioTrack(_ audio: AudioTrack, matrix: [UInt8], dinf: [UInt8]) -> [UInt8]? {
        let indices: [Int: UInt16] = [48_000: 3, 44_100: 4, 32_000: 5, 24_000: 6, 22_050: 7, 16_000: 8]
        guard let index = indices[audio.sampleRate], (1...2).contains(audio.channels) else { return nil }
        let rate = UInt32(audio.sampleRate)
        // AudioSpecificConfig (14496-3 1.6.2.1): object type 2 (AAC-LC), frequency index, channels.
        let config = be16(2 << 11 | index << 7 | UInt16(audio.channels) << 3)
        func descriptor(_ tag: UInt8, _ body: [UInt8]) -> [UInt8] { [tag, UInt8(body.count)] + body }
        let decoderConfig = descriptor(4, [0x40, 0x15] + [0, 0x18, 0] + be32(256_000) + be32(256_000) + descriptor(5, config))
        let esds = fullBox("esds", 0, 0, descriptor(3, be16(2) + [0] + decoderConfig + descriptor(6, [2])))
        let mp4a = box("mp4a", zeros(6) + be16(1) + zeros(8) + be16(UInt16(audio.channels)) + be16(16) + zeros(4) + be32(rate << 16) + esds)
        let tkhd = fullBox("tkhd", 0, 3, be32(0) + be32(0) + be32(2) + zeros(4) + be32(0) + zeros(8) + [0, 0, 0, 1, 0x01, 0x00, 0, 0] + matrix + be32(0) + be32(0))
        let mdhd = fullBox("mdhd", 0, 0, be32(0) + be32(0) + be32(rate) + be32(0) + [0x55, 0xC4, 0, 0])
        let hdlr = fullBox("hdlr", 0, 0, be32(0) + Array("soun".utf8) + zeros(12) + Array("MediaRoute audio\0".utf8))
        let smhd = fullBox("smhd", 0, 0, zeros(4))
        let stbl = box(
            "stbl",
            fullBox("stsd", 0, 0, be32(1) + mp4a) + fullBox("stts", 0, 0, be32(0)) + fullBox("stsc", 0, 0, be32(0))
                + fullBox("stsz", 0, 0, be32(0) + be32(0)) + fullBox("stco", 0, 0, be32(0)))
        return box("trak", tkhd + box("mdia", mdhd + hdlr + box("minf", smhd + dinf + stbl)))
    }

    /// One fragment of the audio track: AAC frames (raw, no ADTS header), 1 024 samples each, the
    /// first decoded at `decodeTime` (samples at the audio's rate).
    public mutating func audioFragment(frames: [[UInt8]], decodeTime: UInt64) -> [UInt8] {
        guard !frames.isEmpty else { return [] }
        sequence &+= 1
        let mfhd = Self.fullBox("mfhd", 0, 0, Self.be32(sequence))
        let tfhd = Self.fullBox("tfhd", 0, 0x02_0000, Self.be32(2))
        let tfdt = Self.fullBox("tfdt", 1, 0, Self.be32(UInt32(decodeTime >> 32)) + Self.be32(UInt32(decodeTime & 0xFFFF_FFFF)))
        // trun: data offset, and each sample's duration and size.
        let trunSize = 12 + 4 + 4 + 8 * frames.count
        let moofSize = 8 + mfhd.count + 8 + tfhd.count + tfdt.count + trunSize
        var entries: [UInt8] = []
        for frame in frames { entries += Self.be32(1_024) + Self.be32(UInt32(frame.count)) }
        let trun = Self.fullBox("trun", 0, 0x301, Self.be32(UInt32(frames.count)) + Self.be32(UInt32(moofSize + 8)) + entries)
        let moof = Self.box("moof", mfhd + Self.box("traf", tfhd + tfdt + trun))
        let payload = frames.flatMap { $0 }
        return moof + Self.be32(UInt32(8 + payload.count)) + Array("mdat".utf8) + payload
    }

    /// One picture's fragment: its access unit (Annex B) as one sample decoded at `presentationTime`.
    public mutating func fragment(accessUnit: [UInt8], isIDR: Bool, presentationTime: Duration) -> [UInt8] {
        sequence &+= 1
        var sample: [UInt8] = []
        sample.reserveCapacity(accessUnit.count + 16)
        for unit in H264Encoder.nalUnits(accessUnit) {
            let type = unit[unit.startIndex] & 0x1F
            guard type != 7, type != 8, type != 9 else { continue }
            sample += Self.be32(UInt32(unit.count))
            sample += unit
        }
        let decodeTime = MPEGTSMuxer.ticks(presentationTime)
        let flags: UInt32 = isIDR ? 0x0200_0000 : 0x0101_0000
        let mfhd = Self.fullBox("mfhd", 0, 0, Self.be32(sequence))
        let tfhd = Self.fullBox("tfhd", 0, 0x02_0000, Self.be32(1))
        let tfdt = Self.fullBox("tfdt", 1, 0, Self.be32(UInt32(decodeTime >> 32)) + Self.be32(UInt32(decodeTime & 0xFFFF_FFFF)))
        // trun: data offset, sample duration, size and flags present; one sample.
        let trunSize = 12 + 4 + 4 + 12
        let moofSize = 8 + mfhd.count + 8 + tfhd.count + tfdt.count + trunSize
        let trun = Self.fullBox(
            "trun", 0, 0x701, Self.be32(1) + Self.be32(UInt32(moofSize + 8)) + Self.be32(frameTicks) + Self.be32(UInt32(sample.count)) + Self.be32(flags))
        let moof = Self.box("moof", mfhd + Self.box("traf", tfhd + tfdt + trun))
        return moof + Self.be32(UInt32(8 + sample.count)) + Array("mdat".utf8) + sample
    }

    static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] { be32(UInt32(8 + payload.count)) + Array(type.utf8) + payload }

    static func fullBox(_ type: String, _ version: UInt8, _ flags: UInt32, _ payload: [UInt8]) -> [UInt8] {
        box(type, [version, UInt8((flags >> 16) & 0xFF), UInt8((flags >> 8) & 0xFF), UInt8(flags & 0xFF)] + payload)
    }

    static func be32(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)] }
    static func be16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
    static func zeros(_ count: Int) -> [UInt8] { [UInt8](repeating: 0, count: count) }
}
