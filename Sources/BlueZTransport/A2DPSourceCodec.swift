import DBus
import Logging

/// A codec an A2DP source endpoint offers, as bus-free logic decides it (BluetoothAudio's
/// codecs: `A2DPSourceCodec.offered(…)` in ExtensionCatalogue), so this transport stays free of codecs.
public struct A2DPSourceCodec: Sendable {
    /// The codec's name (`sbc`, `aac`, `aptx_hd`…): the last part of the endpoint's object path.
    public var name: String
    /// A2DP's codec id (0x00: SBC, 0x02: AAC, 0xFF: vendor).
    public var codec: UInt8
    /// The codec information element offered to speakers.
    public var capabilities: [UInt8]
    /// Picks one configuration from a speaker's capabilities; throws a reason when none fits.
    public var select: @Sendable ([UInt8]) throws -> [UInt8]
    /// Whether BlueZ's `SetConfiguration` hands a configuration this source offered.
    public var accepts: @Sendable ([UInt8]) -> Bool

    public init(
        name: String = "sbc", codec: UInt8, capabilities: [UInt8], select: @escaping @Sendable ([UInt8]) throws -> [UInt8],
        accepts: @escaping @Sendable ([UInt8]) -> Bool
    ) {
        self.name = name
        self.codec = codec
        self.capabilities = capabilities
        self.select = select
        self.accepts = accepts
    }
}
