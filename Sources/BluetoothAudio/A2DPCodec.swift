#if canImport(Glibc)
import Glibc
#endif
import CAVCodec
import CBluetoothCodecs

/// A codec MediaRoute's A2DP source can offer, named as PipeWire's `bluez5.codecs` names them
/// (the names `[bluetooth] codecs` and `Device1.PreferredCodecs` take).
///
/// Each knows its A2DP codec information element: what the source offers, how it picks one
/// configuration from a speaker's capabilities, whether a configuration BlueZ hands back is one
/// it offered, and the stream that configuration makes (rate, channels, bit rate).
public enum A2DPCodec: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case ldac
    case aptxHD = "aptx_hd"
    case aptx
    case aac
    case sbc

    /// LDAC, aptX HD, aptX, AAC, SBC: the higher quality per bit first, as PipeWire orders them.
    public static let defaultPreference: [A2DPCodec] = [.ldac, .aptxHD, .aptx, .aac, .sbc]

    public var description: String {
        switch self {
        case .ldac: "LDAC"
        case .aptxHD: "aptX HD"
        case .aptx: "aptX"
        case .aac: "AAC"
        case .sbc: "SBC"
        }
    }

    /// A2DP's codec byte: 0x00 SBC, 0x02 MPEG-2/4 AAC, 0xFF vendor-specific.
    public var codecByte: UInt8 {
        switch self {
        case .sbc: 0x00
        case .aac: 0x02
        case .aptx, .aptxHD, .ldac: 0xFF
        }
    }

    /// The codec information element MediaRoute's source endpoint offers.
    public var sourceCapabilities: [UInt8] {
        switch self {
        case .sbc: SBCCapabilities.source.bytes
        case .aac: AACCapabilities.source.bytes
        case .aptx: AptXCapabilities.source.bytes
        case .aptxHD: AptXCapabilities.sourceHD.bytes
        case .ldac: LDACCapabilities.source.bytes
        }
    }

    /// The configuration MediaRoute picks from a speaker's capabilities for this codec.
    /// - Throws: ``BluetoothAudioError`` when the bytes are not this codec's or nothing fits.
    public func configuration(from offered: [UInt8]) throws(BluetoothAudioError) -> [UInt8] {
        switch self {
        case .sbc:
            guard let capabilities = SBCCapabilities(bytes: offered) else { throw malformed(offered) }
            return try capabilities.configuration().bytes
        case .aac:
            guard let capabilities = AACCapabilities(bytes: offered) else { throw malformed(offered) }
            return try capabilities.configuration().bytes
        case .aptx, .aptxHD:
            guard let capabilities = AptXCapabilities(bytes: offered, highDefinition: self == .aptxHD) else { throw malformed(offered) }
            return try capabilities.configuration().bytes
        case .ldac:
            guard let capabilities = LDACCapabilities(bytes: offered) else { throw malformed(offered) }
            return try capabilities.configuration().bytes
        }
    }

    private func malformed(_ bytes: [UInt8]) -> BluetoothAudioError {
        BluetoothAudioError("\(bytes.count) bytes are not \(self) capabilities")
    }

    /// Whether `configuration` is one configuration of what this source offers (what it checks
    /// before taking a configuration BlueZ's `SetConfiguration` hands it).
    public func accepts(_ configuration: [UInt8]) -> Bool {
        switch self {
        case .sbc: SBCCapabilities(bytes: configuration)?.isConfiguration(within: .source) == true
        case .aac: AACCapabilities(bytes: configuration)?.isConfiguration(within: .source) == true
        case .aptx: AptXCapabilities(bytes: configuration, highDefinition: false)?.isConfiguration(within: .source) == true
        case .aptxHD: AptXCapabilities(bytes: configuration, highDefinition: true)?.isConfiguration(within: .sourceHD) == true
        case .ldac: LDACCapabilities(bytes: configuration)?.isConfiguration(within: .source) == true
        }
    }

    /// The codec of a transport's `Codec` byte and `Configuration`, when it is one of these
    /// (vendor codecs are told apart by the identifier their element starts with).
    public init?(codecByte: UInt8, configuration: [UInt8]) {
        switch codecByte {
        case 0x00: self = .sbc
        case 0x02: self = .aac
        case 0xFF:
            switch A2DPVendorCodecID(bytes: configuration) {
            case .aptX?: self = .aptx
            case .aptXHD?: self = .aptxHD
            case .ldac?: self = .ldac
            default: return nil
            }
        default: return nil
        }
    }

    /// The sampling rate a configuration chose; nil when it chose none (or is not this codec's).
    public func sampleRate(_ configuration: [UInt8]) -> Int? {
        switch self {
        case .sbc: SBCEncoder.sampleRate(a2dpConfiguration: configuration)
        case .aac: AACCapabilities(bytes: configuration)?.sampleRate
        case .aptx, .aptxHD: AptXCapabilities(bytes: configuration, highDefinition: self == .aptxHD)?.sampleRate
        case .ldac: LDACCapabilities(bytes: configuration)?.sampleRate
        }
    }

    /// The nominal (highest) bit rate of a configuration, in bits per second.
    public func bitrate(_ configuration: [UInt8]) -> Int? {
        switch self {
        case .sbc: SBCCapabilities(bytes: configuration)?.bitrate
        case .aac: AACCapabilities(bytes: configuration).map { AACEncoder.targetBitrate($0, mtu: nil) }
        case .aptx, .aptxHD: AptXCapabilities(bytes: configuration, highDefinition: self == .aptxHD)?.bitrate
        case .ldac: LDACCapabilities(bytes: configuration)?.sampleRate.map { $0 % 44_100 == 0 ? 909_000 : 990_000 }
        }
    }

    /// Whether this box can encode the codec: its library is found (SBC is linked; AAC needs
    /// libavcodec with its `aac` encoder; aptX libfreeaptx; LDAC libldacBT_enc). Opening a
    /// library is what loading it costs: call this when registering endpoints, not when idle.
    /// - Returns: nil when it can, the reason when it cannot.
    public func unavailability() -> String? {
        var message = [CChar](repeating: 0, count: 256)
        switch self {
        case .sbc:
            return nil
        case .aac:
            guard let encoder = mr_aac_open(44_100, 2, 128_000, "twoloop", &message, message.count) else {
                return "AAC needs FFmpeg's libavcodec 59 (Debian: libavcodec59): " + Self.string(message)
            }
            mr_aac_close(encoder)
            return nil
        case .aptx, .aptxHD:
            guard mr_aptx_open(&message, message.count) == 0 else { return "\(self) needs libfreeaptx (Debian: libfreeaptx0): " + Self.string(message) }
            return nil
        case .ldac:
            guard mr_ldac_open(&message, message.count) == 0 else { return "LDAC needs libldacBT_enc (Debian: libldacbt-enc2): " + Self.string(message) }
            return nil
        }
    }

    /// The shared library the codec opens at run time (nil: linked, SBC).
    public var library: (soname: String, package: String)? {
        switch self {
        case .sbc: nil
        case .aac: ("libavcodec.so.59", "libavcodec59")
        case .aptx, .aptxHD: ("libfreeaptx.so.0", "libfreeaptx0")
        case .ldac: ("libldacBT_enc.so.2", "libldacbt-enc2")
        }
    }

    /// Whether the codec's library is on the box, by looking for its file where the dynamic
    /// loader looks (`LD_LIBRARY_PATH`, the multiarch and plain library directories) — without
    /// loading it: the daemon decides what to offer at start, and an idle daemon keeps its
    /// memory. nil when it is; otherwise the notice to log.
    /// - Parameter libraryPath: the loader's extra directories (default: this process's `LD_LIBRARY_PATH`).
    public func missingLibrary(libraryPath: String? = nil) -> String? {
        guard let library else { return nil }
        #if arch(x86_64)
        let triplet = "x86_64-linux-gnu"
        #elseif arch(arm64)
        let triplet = "aarch64-linux-gnu"
        #elseif arch(arm)
        let triplet = "arm-linux-gnueabihf"
        #else
        let triplet = "unknown"
        #endif
        let extra = (libraryPath ?? getenv("LD_LIBRARY_PATH").map { String(cString: $0) } ?? "").split(separator: ":").map(String.init)
        let directories = extra + ["/usr/local/lib", "/lib/\(triplet)", "/usr/lib/\(triplet)", "/lib64", "/usr/lib64", "/lib", "/usr/lib"]
        for directory in directories where access(directory + "/" + library.soname, R_OK) == 0 { return nil }
        return "\(self) is not offered to Bluetooth speakers: \(library.soname) is not installed (Debian: \(library.package))"
    }

    static func string(_ characters: [CChar]) -> String {
        String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Parses `[bluetooth] codecs` / `PreferredCodecs`: names separated by commas or spaces.
    /// - Throws: ``BluetoothAudioError`` naming an unknown codec or a repeated one.
    public static func preference(parsing text: String) throws(BluetoothAudioError) -> [A2DPCodec] {
        let names = text.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }).map { $0.lowercased() }
        return try preference(names)
    }

    /// The codecs named, in order. - Throws: ``BluetoothAudioError`` naming an unknown or repeated one, or none.
    public static func preference(_ names: [String]) throws(BluetoothAudioError) -> [A2DPCodec] {
        var codecs: [A2DPCodec] = []
        for name in names {
            guard let codec = A2DPCodec(rawValue: name.lowercased()) else {
                throw BluetoothAudioError("unknown Bluetooth codec \"\(name)\" (known: \(allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            guard !codecs.contains(codec) else { throw BluetoothAudioError("\(name) is named twice") }
            codecs.append(codec)
        }
        guard !codecs.isEmpty else { throw BluetoothAudioError("no Bluetooth codec named") }
        return codecs
    }
}
