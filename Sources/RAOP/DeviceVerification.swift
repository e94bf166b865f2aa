public import HAP

/// The sender's proof, on each new connection, that it is the one an Apple TV paired with
/// (``DeviceVerificationSetup``): `POST /pair-verify` twice with raw bytes. First a flag and our
/// fresh X25519 key and long-term Ed25519 key; the TV answers with its X25519 key and 64 bytes
/// of its own. Then our Ed25519 signature over the two X25519 keys, encrypted with AES-128-CTR
/// under keys from the shared secret — the keystream's first 64 bytes spent on the TV's 64
/// bytes, as the TVs (and OwnTone) have it. A 200 to the second means the TV knows our key.
///
/// The TV's 64 bytes are not checked (no sender outside Apple knows what key would): this
/// proves us to the TV, not the TV to us. The TV's host is pinned on first use instead, as for
/// every AirPlay receiver.
public struct DeviceVerification: Sendable {
    /// What the next step is.
    public enum Step: Sendable, Equatable {
        /// Send this body to `/pair-verify`.
        case send([UInt8])
        /// The TV took our signature (its 200 to the second body): verified.
        case done
    }

    /// The `Content-Type` of `/pair-verify`'s bodies.
    public static let contentType = "application/octet-stream"

    private let secretKey: [UInt8]
    private let publicKey: [UInt8]
    private let ephemeralSecret: [UInt8]
    /// Our ephemeral X25519 public key.
    public let ephemeralPublicKey: [UInt8]
    private var expected = 1

    /// - Parameters:
    ///   - secretKey, publicKey: the long-term Ed25519 pair the TV keeps from pairing.
    public init(secretKey: [UInt8], publicKey: [UInt8]) throws(HAPError) {
        var generator = SystemRandomNumberGenerator()
        try self.init(secretKey: secretKey, publicKey: publicKey, ephemeralSecret: (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    /// With a given ephemeral secret: tests.
    public init(secretKey: [UInt8], publicKey: [UInt8], ephemeralSecret: [UInt8]) throws(HAPError) {
        guard secretKey.count == 32, publicKey.count == 32 else { throw HAPError(.malformed, "an Ed25519 key is 32 bytes") }
        self.secretKey = secretKey
        self.publicKey = publicKey
        self.ephemeralSecret = ephemeralSecret
        ephemeralPublicKey = try HAPCrypto.x25519(scalar: ephemeralSecret)
    }

    /// The first body: flag 1, three zeros, our X25519 key, our Ed25519 key.
    public func start() -> [UInt8] {
        [1, 0, 0, 0] + ephemeralPublicKey + publicKey
    }

    /// Takes the TV's answer (a 200's body) to the last body: to the first, its X25519 key
    /// (32 bytes) and 64 more, answered with our encrypted signature; to the second, nothing
    /// more is needed.
    public mutating func receive(_ body: [UInt8]) throws(HAPError) -> Step {
        if expected == 2 {
            expected = 0
            return .done
        }
        guard expected == 1 else { throw HAPError(.malformed, "pair-verify is over") }
        guard body.count >= 96 else { throw HAPError(.malformed, "pair-verify: the TV's answer is \(body.count) bytes, not 96") }
        let theirs = Array(body[0..<32])
        let theirData = Array(body[32..<96])
        let shared = try HAPCrypto.x25519(scalar: ephemeralSecret, point: theirs)
        let signature = try HAPCrypto.ed25519Sign(ephemeralPublicKey + theirs, secret: secretKey, publicKey: publicKey)
        let (key, counter) = try Self.verifyKey(sharedSecret: shared)
        let encrypted = try HAPCrypto.aes128CTR(theirData + signature, key: key, counter: counter)
        expected = 2
        return .send([0, 0, 0, 0] + encrypted.suffix(64))
    }

    /// The AES-128-CTR key and counter: the first 16 bytes of SHA-512("Pair-Verify-AES-Key" | secret)
    /// and of SHA-512("Pair-Verify-AES-IV" | secret).
    static func verifyKey(sharedSecret: [UInt8]) throws(HAPError) -> (key: [UInt8], counter: [UInt8]) {
        let key = Array(try HAPCrypto.sha512(Array("Pair-Verify-AES-Key".utf8) + sharedSecret).prefix(16))
        let counter = Array(try HAPCrypto.sha512(Array("Pair-Verify-AES-IV".utf8) + sharedSecret).prefix(16))
        return (key, counter)
    }
}
