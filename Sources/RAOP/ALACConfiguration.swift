

/// The ALAC stream's parameters, as the SDP's `fmtp` announces them to the receiver (the
/// fields of Apple's `ALACSpecificConfig`, in its order).
public struct ALACConfiguration: Sendable, Hashable {
    public var framesPerPacket: UInt32
    public var compatibleVersion: UInt8
    public var bitDepth: UInt8
    public var riceHistoryMultiplier: UInt8
    public var riceInitialHistory: UInt8
    public var riceLimit: UInt8
    public var channels: UInt8
    public var maxRun: UInt16
    public var maxFrameBytes: UInt32
    public var averageBitRate: UInt32
    public var sampleRate: UInt32

    /// What every RAOP sender announces: 352 frames of 16-bit stereo at 44.1 kHz, Apple's
    /// default Rice parameters (what the uncompressed frames are sent under).
    public static let standard = ALACConfiguration(
        framesPerPacket: UInt32(ALACUncompressed.framesPerPacket), compatibleVersion: 0, bitDepth: 16, riceHistoryMultiplier: 40,
        riceInitialHistory: 10, riceLimit: 14, channels: 2, maxRun: 255, maxFrameBytes: 0, averageBitRate: 0, sampleRate: 44_100)

    public init(
        framesPerPacket: UInt32, compatibleVersion: UInt8, bitDepth: UInt8, riceHistoryMultiplier: UInt8, riceInitialHistory: UInt8,
        riceLimit: UInt8, channels: UInt8, maxRun: UInt16, maxFrameBytes: UInt32, averageBitRate: UInt32, sampleRate: UInt32
    ) {
        self.framesPerPacket = framesPerPacket
        self.compatibleVersion = compatibleVersion
        self.bitDepth = bitDepth
        self.riceHistoryMultiplier = riceHistoryMultiplier
        self.riceInitialHistory = riceInitialHistory
        self.riceLimit = riceLimit
        self.channels = channels
        self.maxRun = maxRun
        self.maxFrameBytes = maxFrameBytes
        self.averageBitRate = averageBitRate
        self.sampleRate = sampleRate
    }

    /// The configuration in an encoder's magic cookie: the 24-byte `ALACSpecificConfig`,
    /// alone or inside its 36-byte `alac` atom (FFmpeg's extradata); nil for anything else.
    public init?(magicCookie bytes: [UInt8]) {
        var config = ArraySlice(bytes)
        if bytes.count >= 36, Array(bytes[4..<8]) == Array("alac".utf8) { config = bytes[12...] }
        guard config.count >= 24 else { return nil }
        let base = config.startIndex
        func u32(_ offset: Int) -> UInt32 {
            (0..<4).reduce(UInt32(0)) { $0 << 8 | UInt32(config[base + offset + $1]) }
        }
        self.init(
            framesPerPacket: u32(0), compatibleVersion: config[base + 4], bitDepth: config[base + 5], riceHistoryMultiplier: config[base + 6],
            riceInitialHistory: config[base + 7], riceLimit: config[base + 8], channels: config[base + 9],
            maxRun: UInt16(config[base + 10]) << 8 | UInt16(config[base + 11]), maxFrameBytes: u32(12), averageBitRate: u32(16),
            sampleRate: u32(20))
    }

    /// The `fmtp` attribute's value after the payload type.
    public var formatParameters: String {
        "\(framesPerPacket) \(compatibleVersion) \(bitDepth) \(riceHistoryMultiplier) \(riceInitialHistory) \(riceLimit) \(channels) \(maxRun) \(maxFrameBytes) \(averageBitRate) \(sampleRate)"
    }
}
