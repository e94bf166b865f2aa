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

/// The header every vendor-specific A2DP codec element starts with: a 32-bit Bluetooth SIG
/// company identifier and a 16-bit codec id, both little-endian.
public struct A2DPVendorCodecID: Sendable, Hashable, CustomStringConvertible {
    public var vendor: UInt32
    public var codec: UInt16

    public static let aptX = A2DPVendorCodecID(vendor: 0x0000_004F, codec: 0x0001)  // APT Ltd.
    public static let aptXHD = A2DPVendorCodecID(vendor: 0x0000_00D7, codec: 0x0024)  // Qualcomm
    public static let ldac = A2DPVendorCodecID(vendor: 0x0000_012D, codec: 0x00AA)  // Sony

    public init(vendor: UInt32, codec: UInt16) {
        self.vendor = vendor
        self.codec = codec
    }

    /// The identifier at the start of `bytes`; nil when they are shorter than six bytes.
    public init?(bytes: [UInt8]) {
        guard bytes.count >= 6 else { return nil }
        vendor = UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24
        codec = UInt16(bytes[4]) | UInt16(bytes[5]) << 8
    }

    public var bytes: [UInt8] {
        [UInt8(truncatingIfNeeded: vendor), UInt8(truncatingIfNeeded: vendor >> 8), UInt8(truncatingIfNeeded: vendor >> 16),
         UInt8(truncatingIfNeeded: vendor >> 24), UInt8(truncatingIfNeeded: codec), UInt8(truncatingIfNeeded: codec >> 8)]
    }

    public var description: String { "vendor 0x\(String(vendor, radix: 16)) codec 0x\(String(codec, radix: 16))" }
}

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
