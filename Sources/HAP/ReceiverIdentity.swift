/// What pair-setup learns of a receiver and pair-verify checks on every later connection: its
/// pairing identifier and long-term Ed25519 public key.
public struct ReceiverIdentity: Sendable, Hashable, Codable {
    public var identifier: String
    public var publicKey: [UInt8]

    public init(identifier: String, publicKey: [UInt8]) {
        self.identifier = identifier
        self.publicKey = publicKey
    }
}
