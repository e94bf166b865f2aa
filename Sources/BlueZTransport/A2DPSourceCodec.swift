import DBus
import Logging

/// The codec an A2DP source endpoint offers, as bus-free logic decides it (BluetoothAudio's
/// SBC: `A2DPSourceCodec.sbc` in BLESpeakerExtension), so this transport stays free of codecs.
public struct A2DPSourceCodec: Sendable {
    /// A2DP's codec id (0x00: SBC).
    public var codec: UInt8
    /// The codec information element offered to speakers.
    public var capabilities: [UInt8]
    /// Picks one configuration from a speaker's capabilities; throws a reason when none fits.
    public var select: @Sendable ([UInt8]) throws -> [UInt8]
    /// Whether BlueZ's `SetConfiguration` hands a configuration this source offered.
    public var accepts: @Sendable ([UInt8]) -> Bool

    public init(
        codec: UInt8, capabilities: [UInt8], select: @escaping @Sendable ([UInt8]) throws -> [UInt8],
        accepts: @escaping @Sendable ([UInt8]) -> Bool
    ) {
        self.codec = codec
        self.capabilities = capabilities
        self.select = select
        self.accepts = accepts
    }
}
