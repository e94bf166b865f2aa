/// A2DP's SBC codec information element (A2DP spec §4.3.2): four bytes a sink offers as
/// its capabilities and a source answers with one configuration from them.
///
/// Byte 0: sampling frequency (16/32/44.1/48 kHz: bits 7…4) and channel mode (mono, dual
/// channel, stereo, joint stereo: bits 3…0); byte 1: block length (4/8/12/16: bits 7…4),
/// subbands (4/8: bits 3…2) and allocation method (SNR, loudness: bits 1…0); bytes 2 and 3:
/// minimum and maximum bitpool. The bytes come from the speaker (through BlueZ), so they
/// are checked, never trusted.
public struct SBCCapabilities: Sendable, Hashable {
    public var frequencies: UInt8
    public var channelModes: UInt8
    public var blockLengths: UInt8
    public var subbands: UInt8
    public var allocationMethods: UInt8
    public var minimumBitpool: UInt8
    public var maximumBitpool: UInt8

    /// What MediaRoute's A2DP source offers: everything SBC has, bitpool 2…53 (the
    /// "high quality" bitpool of A2DP's recommendations at 44.1 kHz joint stereo).
    public static let source = SBCCapabilities(bytes: [0xFF, 0xFF, 2, 53])!

    /// The element in `bytes`; nil unless it is four bytes.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 else { return nil }
        frequencies = bytes[0] >> 4
        channelModes = bytes[0] & 0x0F
        blockLengths = bytes[1] >> 4
        subbands = (bytes[1] >> 2) & 0x03
        allocationMethods = bytes[1] & 0x03
        minimumBitpool = bytes[2]
        maximumBitpool = bytes[3]
    }

    public var bytes: [UInt8] {
        [frequencies << 4 | channelModes, blockLengths << 4 | subbands << 2 | allocationMethods, minimumBitpool, maximumBitpool]
    }

    /// The highest bitpool A2DP recommends for a frequency and mode (high quality).
    static func recommendedBitpool(frequencyBit: UInt8, modeBit: UInt8) -> UInt8 {
        let stereo = modeBit & 0x03 != 0  // stereo or joint stereo
        let is48k = frequencyBit == 0x1
        return stereo ? (is48k ? 51 : 53) : (is48k ? 29 : 31)
    }

    /// The one configuration a source picks from a sink's capabilities: 44.1 kHz before 48,
    /// joint stereo before stereo, dual channel, mono; 16 blocks, 8 subbands, loudness; the
    /// highest bitpool both allow up to A2DP's high-quality recommendation.
    /// - Throws: ``BluetoothAudioError`` naming what the sink lacks.
    public func configuration() throws(BluetoothAudioError) -> SBCCapabilities {
        func pick(_ field: UInt8, _ order: [UInt8], _ what: String) throws(BluetoothAudioError) -> UInt8 {
            guard let bit = order.first(where: { field & $0 != 0 }) else {
                throw BluetoothAudioError("the speaker's SBC capabilities offer no \(what)")
            }
            return bit
        }
        let frequency = try pick(frequencies, [0x2, 0x1, 0x4, 0x8], "sampling frequency")  // 44.1, 48, 32, 16 kHz
        let mode = try pick(channelModes, [0x1, 0x2, 0x4, 0x8], "channel mode")  // joint, stereo, dual, mono
        let blocks = try pick(blockLengths, [0x1, 0x2, 0x4, 0x8], "block length")  // 16, 12, 8, 4
        let bands = try pick(subbands, [0x1, 0x2], "subband count")  // 8, 4
        let allocation = try pick(allocationMethods, [0x1, 0x2], "allocation method")  // loudness, SNR
        let low = max(2, minimumBitpool)
        let high = min(maximumBitpool, Self.recommendedBitpool(frequencyBit: frequency, modeBit: mode), 250)
        guard low <= high else {
            throw BluetoothAudioError("the speaker's SBC bitpool range \(minimumBitpool)…\(maximumBitpool) is unusable")
        }
        var chosen = self
        chosen.frequencies = frequency
        chosen.channelModes = mode
        chosen.blockLengths = blocks
        chosen.subbands = bands
        chosen.allocationMethods = allocation
        chosen.minimumBitpool = low
        chosen.maximumBitpool = high
        return chosen
    }

    /// Whether this is one configuration (one bit of each field) within `capabilities`:
    /// what a source checks before it takes a configuration BlueZ hands it.
    public func isConfiguration(within capabilities: SBCCapabilities) -> Bool {
        func single(_ field: UInt8, within allowed: UInt8) -> Bool { field != 0 && field & (field - 1) == 0 && field & allowed == field }
        return single(frequencies, within: capabilities.frequencies) && single(channelModes, within: capabilities.channelModes)
            && single(blockLengths, within: capabilities.blockLengths) && single(subbands, within: capabilities.subbands)
            && single(allocationMethods, within: capabilities.allocationMethods)
            && minimumBitpool >= max(2, capabilities.minimumBitpool) && maximumBitpool <= capabilities.maximumBitpool
            && minimumBitpool <= maximumBitpool
    }

    /// The bit rate of one configuration at its highest bitpool (A2DP's SBC frame length times
    /// frames per second); nil unless every field has one bit.
    public var bitrate: Int? {
        func value(_ field: UInt8, _ table: [UInt8: Int]) -> Int? { table[field] }
        guard let rate = value(frequencies, [0x8: 16_000, 0x4: 32_000, 0x2: 44_100, 0x1: 48_000]),
            let blocks = value(blockLengths, [0x8: 4, 0x4: 8, 0x2: 12, 0x1: 16]),
            let bands = value(subbands, [0x2: 4, 0x1: 8]),
            [0x8, 0x4, 0x2, 0x1].contains(channelModes)
        else { return nil }
        let channels = channelModes == 0x8 ? 1 : 2
        let bitpool = Int(maximumBitpool)
        let payloadBits: Int
        switch channelModes {
        case 0x8, 0x4: payloadBits = blocks * channels * bitpool  // mono, dual channel
        case 0x2: payloadBits = blocks * bitpool  // stereo
        default: payloadBits = bands + blocks * bitpool  // joint stereo
        }
        let frameBytes = 4 + (4 * bands * channels) / 8 + (payloadBits + 7) / 8
        return 8 * frameBytes * rate / (bands * blocks)
    }
}
