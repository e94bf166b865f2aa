/// One of a device's own audio stream endpoints as the stack lists them (A2DP: a speaker's
/// stream endpoint, its codec and capabilities), for choosing which codec a stream runs.
public struct RemoteAudioEndpoint: Sendable, Hashable {
    /// The stack's name for it (BlueZ: the endpoint's object path).
    public var id: String
    /// The codec's identifier in the profile's numbering (A2DP: 0x00 SBC, 0x02 AAC, 0xFF vendor).
    public var codec: UInt8
    /// The codec information element the device offers.
    public var capabilities: [UInt8]

    public init(id: String, codec: UInt8, capabilities: [UInt8]) {
        self.id = id
        self.codec = codec
        self.capabilities = capabilities
    }
}
