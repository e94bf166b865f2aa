/// A2DP's MPEG-2/4 AAC codec information element (A2DP spec §4.5.2): six bytes.
///
/// Byte 0: object types (bit 7 MPEG-2 AAC LC, bit 6 MPEG-4 AAC LC, bit 5 MPEG-4 LTP, bit 4
/// MPEG-4 scalable, …); bytes 1 and 2 (high nibble): twelve sampling frequency bits, 8 kHz
/// (bit 11) to 96 kHz (bit 0); byte 2 bits 3…2: channels (0x8 one, 0x4 two); byte 3 bit 7:
/// VBR; the remaining 23 bits: the bit rate in bits per second (0: unknown). The bytes come
/// from the speaker, so they are checked, never trusted.
public struct AACCapabilities: Sendable, Hashable {
    public var objectTypes: UInt8
    /// Bit 11: 8 kHz … bit 4: 44.1 kHz, bit 3: 48 kHz … bit 0: 96 kHz.
    public var frequencies: UInt16
    /// 0x2: one channel, 0x1: two (the field's two bits, shifted down).
    public var channels: UInt8
    public var variableBitRate: Bool
    public var bitrate: Int

    static let mpeg2LC: UInt8 = 0x80
    static let mpeg4LC: UInt8 = 0x40
    static let frequencyBits: [(rate: Int, bit: UInt16)] = [
        (8_000, 0x800), (11_025, 0x400), (12_000, 0x200), (16_000, 0x100), (22_050, 0x80), (24_000, 0x40),
        (32_000, 0x20), (44_100, 0x10), (48_000, 0x08), (64_000, 0x04), (88_200, 0x02), (96_000, 0x01),
    ]
    /// The highest bit rate MediaRoute asks of the AAC encoder: A2DP sinks are built for
    /// 256–320 kbit/s, the most an EDR link carries besides its other traffic.
    public static let maximumBitrate = 320_000

    /// What MediaRoute's A2DP source offers: AAC-LC (MPEG-2 and MPEG-4), 44.1 and 48 kHz (the
    /// rates the box's audio arrives at; others would need resampling), one or two channels,
    /// VBR, up to ``maximumBitrate``.
    public static let source = AACCapabilities(
        objectTypes: mpeg2LC | mpeg4LC, frequencies: 0x18, channels: 0x3, variableBitRate: true, bitrate: maximumBitrate)

    public init(objectTypes: UInt8, frequencies: UInt16, channels: UInt8, variableBitRate: Bool, bitrate: Int) {
        self.objectTypes = objectTypes
        self.frequencies = frequencies & 0xFFF
        self.channels = channels & 0x3
        self.variableBitRate = variableBitRate
        self.bitrate = bitrate & 0x7F_FFFF
    }

    /// The element in `bytes`; nil unless it is six bytes.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 6 else { return nil }
        objectTypes = bytes[0]
        frequencies = UInt16(bytes[1]) << 4 | UInt16(bytes[2] >> 4)
        channels = (bytes[2] >> 2) & 0x3
        variableBitRate = bytes[3] & 0x80 != 0
        bitrate = Int(bytes[3] & 0x7F) << 16 | Int(bytes[4]) << 8 | Int(bytes[5])
    }

    public var bytes: [UInt8] {
        [
            objectTypes, UInt8(truncatingIfNeeded: frequencies >> 4), UInt8(truncatingIfNeeded: frequencies & 0xF) << 4 | channels << 2,
            (variableBitRate ? 0x80 : 0) | UInt8(truncatingIfNeeded: bitrate >> 16) & 0x7F,
            UInt8(truncatingIfNeeded: bitrate >> 8), UInt8(truncatingIfNeeded: bitrate),
        ]
    }

    /// The sampling rate of a configuration (one frequency bit); nil otherwise.
    public var sampleRate: Int? { Self.frequencyBits.first { $0.bit == frequencies }?.rate }
    /// The channel count of a configuration (one channel bit); nil otherwise.
    public var channelCount: Int? { channels == 0x2 ? 1 : channels == 0x1 ? 2 : nil }

    /// The configuration a source picks: MPEG-4 AAC-LC before MPEG-2 (the same bitstream to an
    /// encoder), 44.1 kHz before 48, two channels before one, constant bit rate at the lower of
    /// the sink's bit rate (when it states one) and ``maximumBitrate``.
    /// - Throws: ``BluetoothAudioError`` naming what the sink lacks.
    public func configuration() throws(BluetoothAudioError) -> AACCapabilities {
        let objectType: UInt8
        if objectTypes & Self.mpeg4LC != 0 {
            objectType = Self.mpeg4LC
        } else if objectTypes & Self.mpeg2LC != 0 {
            objectType = Self.mpeg2LC
        } else {
            throw BluetoothAudioError("the speaker's AAC capabilities offer no AAC-LC object type")
        }
        guard let frequency = [UInt16(0x10), 0x08].first(where: { frequencies & $0 != 0 }) else {
            throw BluetoothAudioError("the speaker's AAC capabilities offer neither 44.1 nor 48 kHz")
        }
        guard let channel = [UInt8(0x1), 0x2].first(where: { channels & $0 != 0 }) else {
            throw BluetoothAudioError("the speaker's AAC capabilities offer no channel count")
        }
        let rate = bitrate == 0 ? Self.maximumBitrate : min(bitrate, Self.maximumBitrate)
        guard rate >= 32_000 else { throw BluetoothAudioError("the speaker's AAC bit rate \(bitrate) is unusable") }
        return AACCapabilities(objectTypes: objectType, frequencies: frequency, channels: channel, variableBitRate: false, bitrate: rate)
    }

    /// Whether this is one configuration within `capabilities`.
    public func isConfiguration(within capabilities: AACCapabilities) -> Bool {
        func single<T: FixedWidthInteger>(_ field: T, _ allowed: T) -> Bool { field.nonzeroBitCount == 1 && field & allowed == field }
        return single(objectTypes & (Self.mpeg2LC | Self.mpeg4LC), capabilities.objectTypes) && objectTypes & ~(Self.mpeg2LC | Self.mpeg4LC) == 0
            && single(frequencies, capabilities.frequencies) && single(channels, capabilities.channels)
            && (bitrate == 0 || capabilities.bitrate == 0 || bitrate <= capabilities.bitrate)
    }
}
