/// One picture of an app's H.264: its NAL units as an Annex B byte stream (four-byte start
/// codes, access unit delimiters left out: the muxers write their own).
public struct H264AccessUnit: Sendable, Hashable {
    public var bytes: [UInt8]
    /// Holds an IDR slice: a decoder may start here.
    public var isIDR: Bool
    /// Holds a sequence and a picture parameter set (with an IDR: a reader starting here needs nothing before).
    public var hasParameterSets: Bool

    public init(bytes: [UInt8], isIDR: Bool, hasParameterSets: Bool) {
        self.bytes = bytes
        self.isIDR = isIDR
        self.hasParameterSets = hasParameterSets
    }
}

extension H264AccessUnit {
    /// Its NAL units, start codes off (inside a NAL unit `00 00 01` cannot occur: 7.4.1).
    public var units: [ArraySlice<UInt8>] {
        var found: [ArraySlice<UInt8>] = []
        var start: Int? = nil
        var index = 0
        while index + 2 < bytes.count {
            if bytes[index] == 0, bytes[index + 1] == 0, bytes[index + 2] == 1 {
                if let begin = start { found.append(bytes[begin..<(bytes[index - 1] == 0 ? index - 1 : index)]) }
                index += 3
                start = index
            } else {
                index += 1
            }
        }
        if let begin = start, begin < bytes.count { found.append(bytes[begin...]) }
        return found.filter { !$0.isEmpty }
    }

    /// What its sequence parameter set says, if it holds one.
    public func sequenceParameters() throws(H264StreamError) -> H264SequenceParameters? {
        guard let sps = units.first(where: { $0.first.map { $0 & 0x1F == 7 } ?? false }) else { return nil }
        return try H264SequenceParameters(unit: sps)
    }
}
