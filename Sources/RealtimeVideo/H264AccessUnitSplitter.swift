/// Splits an H.264 Annex B byte stream (ITU-T H.264 Annex B: what `ffmpeg -f h264`, x264 and
/// hardware encoders write) into access units, from pieces of any size as a socket gives them.
///
/// A NAL unit ends where the next start code begins, so an access unit is known whole when the
/// first bytes of the next one come (7.4.1.2.3: an access unit delimiter, a parameter set, SEI,
/// or a slice whose `first_mb_in_slice` is 0 after a slice: its first two bytes tell) — on a
/// live stream, when the writer starts its next picture — or at ``finish()``. Every byte kept is budgeted: a NAL unit or access unit
/// beyond ``maximumAccessUnitBytes`` and bytes that never show a start code are refused with a
/// typed error. Slices are read as far as their type: B slices are refused, as the muxers send
/// pictures in the order they come and show them so.
public struct H264AccessUnitSplitter: Sendable {
    public let maximumAccessUnitBytes: Int
    /// Bytes seen before the first start code may be a stream's leading zeros, not more.
    public static let maximumLeadingBytes = 4096
    /// The NAL unit being read (after its start code), or the bytes before the first start code.
    private var nal: [UInt8] = []
    private var zeros = 0
    private var sawStartCode = false
    /// Whether the NAL unit being read was told to start an access unit or not (from its first bytes).
    private var classified = false
    private var leadingBytes = 0
    private var unit: [UInt8] = []
    private var unitHasSlice = false
    private var unitIsIDR = false
    private var unitHasSPS = false
    private var unitHasPPS = false

    public init(maximumAccessUnitBytes: Int) {
        self.maximumAccessUnitBytes = maximumAccessUnitBytes
    }

    /// The access units completed by `bytes`.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) throws(H264StreamError) -> [H264AccessUnit] {
        var done: [H264AccessUnit] = []
        var runStart = 0
        for (index, byte) in bytes.enumerated() {
            if byte == 0 {
                zeros += 1
                continue
            }
            if byte == 1, zeros >= 2 {
                // A start code: the NAL unit before it ends at its zeros (trailing zeros belong to the code).
                nal.append(contentsOf: bytes[runStart..<index])
                if !sawStartCode {
                    leadingBytes += nal.count
                    guard leadingBytes <= Self.maximumLeadingBytes else { throw .notAnnexB }
                }
                nal.removeLast(min(zeros, nal.count))
                try endNAL(into: &done)
                runStart = index + 1
                sawStartCode = true
            }
            zeros = 0
        }
        nal.append(contentsOf: bytes[runStart...])
        if sawStartCode, !classified, nal.count >= 2 { try classify(into: &done) }
        if !sawStartCode {
            leadingBytes += nal.count
            nal.removeAll(keepingCapacity: true)
            guard leadingBytes <= Self.maximumLeadingBytes else { throw .notAnnexB }
        } else if nal.count + unit.count > maximumAccessUnitBytes {
            throw .accessUnitTooLarge(limit: maximumAccessUnitBytes)
        }
        return done
    }

    /// The stream ended: its last access units (the one its last NAL unit ended, and that one's).
    public mutating func finish() throws(H264StreamError) -> [H264AccessUnit] {
        var done: [H264AccessUnit] = []
        // Bytes that ended without a start code were something else.
        guard sawStartCode || leadingBytes == 0 else { throw .notAnnexB }
        if sawStartCode {
            nal.removeLast(min(zeros, nal.count))
            try endNAL(into: &done)
        }
        zeros = 0
        if unitHasSlice { done.append(takeUnit()) }
        return done
    }

    /// The NAL unit being read begins an access unit or not: the one gathered so far is done if so.
    private mutating func classify(into done: inout [H264AccessUnit]) throws(H264StreamError) {
        classified = true
        guard let header = nal.first else { return }
        guard header & 0x80 == 0 else { throw .forbiddenBit }
        let type = header & 0x1F
        // first_mb_in_slice is ue(v): 0 is the single bit 1 (no escape byte can come after a header byte).
        let firstOfPicture = (type == 1 || type == 5) && nal.count >= 2 && nal[nal.startIndex + 1] & 0x80 != 0
        let startsUnit = type == 9 || type == 7 || type == 8 || type == 6 || (14...18).contains(type) || firstOfPicture
        if startsUnit, unitHasSlice { done.append(takeUnit()) }
    }

    private mutating func endNAL(into done: inout [H264AccessUnit]) throws(H264StreamError) {
        defer {
            nal.removeAll(keepingCapacity: true)
            classified = false
        }
        guard sawStartCode, let header = nal.first else { return }
        if !classified { try classify(into: &done) }
        let type = header & 0x1F
        let isSlice = type == 1 || type == 5
        if isSlice {
            var reader = RBSPBitReader(unit: nal[...], limit: 16)
            _ = try reader.unsigned()
            let sliceType = try reader.unsigned()
            guard sliceType <= 9 else { throw .malformed("slice type \(sliceType)") }
            if sliceType % 5 == 1 { throw .bidirectionalSlices }
        }
        guard type != 9 else { return }
        guard unit.count + nal.count + 4 <= maximumAccessUnitBytes else { throw .accessUnitTooLarge(limit: maximumAccessUnitBytes) }
        unit += [0, 0, 0, 1]
        unit += nal
        unitHasSlice = unitHasSlice || isSlice
        unitIsIDR = unitIsIDR || type == 5
        unitHasSPS = unitHasSPS || type == 7
        unitHasPPS = unitHasPPS || type == 8
    }

    private mutating func takeUnit() -> H264AccessUnit {
        defer {
            unit = []
            unitHasSlice = false
            unitIsIDR = false
            unitHasSPS = false
            unitHasPPS = false
        }
        return H264AccessUnit(bytes: unit, isIDR: unitIsIDR, hasParameterSets: unitHasSPS && unitHasPPS)
    }
}
