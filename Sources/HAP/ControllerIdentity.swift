/// Who MediaRoute is to the receivers it pairs with: a pairing identifier and a long-term
/// Ed25519 key pair, made once per box and kept (the daemon's state directory).
public struct ControllerIdentity: Sendable, Hashable {
    /// The pairing identifier receivers store us under (a UUID string).
    public var identifier: String
    public var secretKey: [UInt8]
    public var publicKey: [UInt8]

    public init(identifier: String, secretKey: [UInt8], publicKey: [UInt8]) {
        self.identifier = identifier
        self.secretKey = secretKey
        self.publicKey = publicKey
    }

    /// A new identity: a random identifier and key pair.
    public static func generate() throws(HAPError) -> ControllerIdentity {
        let (secret, publicKey) = try HAPCrypto.ed25519KeyPair()
        var generator = SystemRandomNumberGenerator()
        let random = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let hex = random.map { byte in String(byte, radix: 16).count == 1 ? "0" + String(byte, radix: 16) : String(byte, radix: 16) }.joined().uppercased()
        let parts = [hex.prefix(8), hex.dropFirst(8).prefix(4), hex.dropFirst(12).prefix(4), hex.dropFirst(16).prefix(4), hex.dropFirst(20)]
        return ControllerIdentity(identifier: parts.joined(separator: "-"), secretKey: secret, publicKey: publicKey)
    }
}
