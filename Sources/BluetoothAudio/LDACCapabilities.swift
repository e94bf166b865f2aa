/// LDAC's element (8 bytes): the vendor header, sampling frequencies (0x20 44.1 kHz, 0x10 48,
/// 0x08 88.2, 0x04 96, 0x02 176.4, 0x01 192) and channel modes (0x04 mono, 0x02 dual, 0x01 stereo).
public struct LDACCapabilities: Sendable, Hashable {
    public var frequencies: UInt8
    public var channelModes: UInt8

    /// 44.1 and 48 kHz (the box's audio rates), every channel mode.
    public static let source = LDACCapabilities(frequencies: 0x30, channelModes: 0x07)

    public init(frequencies: UInt8, channelModes: UInt8) {
        self.frequencies = frequencies & 0x3F
        self.channelModes = channelModes & 0x07
    }

    public init?(bytes: [UInt8]) {
        guard bytes.count == 8, A2DPVendorCodecID(bytes: bytes) == .ldac else { return nil }
        frequencies = bytes[6] & 0x3F
        channelModes = bytes[7] & 0x07
    }

    public var bytes: [UInt8] { A2DPVendorCodecID.ldac.bytes + [frequencies, channelModes] }

    public var sampleRate: Int? { [0x20: 44_100, 0x10: 48_000, 0x08: 88_200, 0x04: 96_000, 0x02: 176_400, 0x01: 192_000][frequencies] }
    public var channelCount: Int? { [0x04: 1, 0x02: 2, 0x01: 2][channelModes] }

    /// 44.1 kHz before 48; stereo, dual channel, mono.
    public func configuration() throws(BluetoothAudioError) -> LDACCapabilities {
        guard let frequency = [UInt8(0x20), 0x10].first(where: { frequencies & $0 != 0 }) else {
            throw BluetoothAudioError("the speaker's LDAC capabilities offer neither 44.1 nor 48 kHz")
        }
        guard let mode = [UInt8(0x01), 0x02, 0x04].first(where: { channelModes & $0 != 0 }) else {
            throw BluetoothAudioError("the speaker's LDAC capabilities offer no channel mode")
        }
        return LDACCapabilities(frequencies: frequency, channelModes: mode)
    }

    public func isConfiguration(within capabilities: LDACCapabilities) -> Bool {
        frequencies.nonzeroBitCount == 1 && frequencies & capabilities.frequencies == frequencies
            && channelModes.nonzeroBitCount == 1 && channelModes & capabilities.channelModes == channelModes
    }
}
