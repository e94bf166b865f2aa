/// aptX (7 bytes) and aptX HD (11 bytes: the same and four reserved) elements: the vendor
/// header, then sampling frequencies in the high nibble (0x8 16 kHz, 0x4 32, 0x2 44.1, 0x1 48)
/// and channel modes in the low one (0x2 stereo, 0x1 mono) of one byte.
public struct AptXCapabilities: Sendable, Hashable {
    public var highDefinition: Bool
    public var frequencies: UInt8
    public var channelModes: UInt8

    public static let source = AptXCapabilities(highDefinition: false, frequencies: 0x3, channelModes: 0x2)
    public static let sourceHD = AptXCapabilities(highDefinition: true, frequencies: 0x3, channelModes: 0x2)

    public init(highDefinition: Bool, frequencies: UInt8, channelModes: UInt8) {
        self.highDefinition = highDefinition
        self.frequencies = frequencies & 0xF
        self.channelModes = channelModes & 0xF
    }

    /// The element in `bytes` when it is aptX (`highDefinition` false) or aptX HD; nil otherwise.
    public init?(bytes: [UInt8], highDefinition: Bool) {
        let id: A2DPVendorCodecID = highDefinition ? .aptXHD : .aptX
        guard bytes.count == (highDefinition ? 11 : 7), A2DPVendorCodecID(bytes: bytes) == id else { return nil }
        self.highDefinition = highDefinition
        frequencies = bytes[6] >> 4
        channelModes = bytes[6] & 0xF
    }

    public var bytes: [UInt8] {
        (highDefinition ? A2DPVendorCodecID.aptXHD : .aptX).bytes + [frequencies << 4 | channelModes] + (highDefinition ? [0, 0, 0, 0] : [])
    }

    public var sampleRate: Int? { [0x8: 16_000, 0x4: 32_000, 0x2: 44_100, 0x1: 48_000][frequencies] }

    /// 16-bit (aptX) or 24-bit (HD) stereo at a quarter of its PCM rate.
    public var bitrate: Int? { sampleRate.map { $0 * 2 * (highDefinition ? 24 : 16) / 4 } }

    /// 44.1 kHz before 48, stereo (the encoder codes two channels).
    public func configuration() throws(BluetoothAudioError) -> AptXCapabilities {
        let name = highDefinition ? "aptX HD" : "aptX"
        guard let frequency = [UInt8(0x2), 0x1].first(where: { frequencies & $0 != 0 }) else {
            throw BluetoothAudioError("the speaker's \(name) capabilities offer neither 44.1 nor 48 kHz")
        }
        guard channelModes & 0x2 != 0 else { throw BluetoothAudioError("the speaker's \(name) capabilities offer no stereo") }
        return AptXCapabilities(highDefinition: highDefinition, frequencies: frequency, channelModes: 0x2)
    }

    public func isConfiguration(within capabilities: AptXCapabilities) -> Bool {
        highDefinition == capabilities.highDefinition && frequencies.nonzeroBitCount == 1 && frequencies & capabilities.frequencies == frequencies
            && channelModes == 0x2 && capabilities.channelModes & 0x2 != 0
    }
}
