/// The controller's side of SRP-6a as HAP pairing uses it (RFC 5054's 3072-bit group,
/// generator 5, SHA-512, username "Pair-Setup"): from the receiver's salt and public key and the
/// setup code, our public key, our proof, and the session key once the receiver's proof checks.
///
/// The arithmetic is libgcrypt's (``HAPCrypto/modular(_:_:_:modulus:length:)``); the formulas
/// are RFC 5054's: k = H(N | PAD(g)), x = H(s | H(I ":" P)), u = H(PAD(A) | PAD(B)),
/// S = (B − k·gˣ)^(a + u·x) mod N, K = H(S), M1 = H(H(N) xor H(g) | H(I) | s | A | B | K),
/// M2 = H(A | M1 | K). Integers are hashed without leading zeros except where PAD says so
/// (as the receivers' implementations and PyPI's srptools do).
public struct SRPClient: Sendable {
    /// RFC 5054's 3072-bit prime, big-endian.
    public static let prime: [UInt8] = bytes(fromHex: """
        FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DD\
        EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED\
        EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE45B3DC2007CB8A163BF0598DA48361C55D39A69163FA8FD24CF5F\
        83655D23DCA3AD961C62F356208552BB9ED529077096966D670C354E4ABC9804F1746C08CA18217C32905E462E36CE3B\
        E39E772C180E86039B2783A2EC07A28FB5C55DF06F4C52C9DE2BCBF6955817183995497CEA956AE515D2261898FA0510\
        15728E5A8AAAC42DAD33170D04507A33A85521ABDF1CBA64ECFB850458DBEF0A8AEA71575D060C7DB3970F85A6E1E4C7\
        ABF5AE8CDB0933D71E8C94E04A25619DCEE3D2261AD2EE6BF12FFA06D98A0864D87602733EC86A64521F2B18177B200C\
        BBE117577A615D6C770988C0BAD946E208E24FA074E5AB3143DB5BFCE0FD108E4B82D120A93AD2CAFFFFFFFFFFFFFFFF
        """)
    public static let generator: [UInt8] = [5]
    public static let username = "Pair-Setup"

    /// Our public key A (384 bytes).
    public let publicKey: [UInt8]
    private let privateKey: [UInt8]

    /// A client with a fresh private key (32 random bytes).
    public init() throws(HAPError) {
        var generator = SystemRandomNumberGenerator()
        try self.init(privateKey: (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    /// A client with a given private key: tests, against published vectors.
    public init(privateKey: [UInt8]) throws(HAPError) {
        self.privateKey = privateKey
        publicKey = try HAPCrypto.modular(.power, Self.generator, privateKey, modulus: Self.prime, length: Self.prime.count)
    }

    /// What the exchange yields: our proof to send, the receiver's proof to expect, the session key.
    public struct Proofs: Sendable {
        public var clientProof: [UInt8]
        public var expectedServerProof: [UInt8]
        public var sessionKey: [UInt8]
    }

    /// Our proof for the receiver's `salt` and `serverPublicKey` and the setup code `password`.
    /// Throws `.malformed` when B mod N is 0 (a receiver trying to force the key).
    public func proofs(salt: [UInt8], serverPublicKey: [UInt8], password: String) throws(HAPError) -> Proofs {
        let n = Self.prime
        let width = n.count
        guard !serverPublicKey.isEmpty, serverPublicKey.count <= width else { throw HAPError(.malformed, "an SRP public key of \(serverPublicKey.count) bytes") }
        let b = try HAPCrypto.modular(.sum, serverPublicKey, [0], modulus: n, length: width)
        guard b.contains(where: { $0 != 0 }) else { throw HAPError(.malformed, "the receiver's SRP public key is 0 mod N") }
        let h = HAPCrypto.sha512
        let k = try h(n + Self.pad(Self.generator, to: width))
        let u = try h(Self.pad(publicKey, to: width) + Self.pad(serverPublicKey, to: width))
        guard u.contains(where: { $0 != 0 }) else { throw HAPError(.malformed, "the SRP scrambler is 0") }
        let x = try h(salt + h(Array("\(Self.username):\(password)".utf8)))
        // S = (B − k·g^x)^(a + u·x) mod N; the exponent may be reduced mod N − 1 (g's order divides it).
        let gx = try HAPCrypto.modular(.power, Self.generator, x, modulus: n, length: width)
        let kgx = try HAPCrypto.modular(.product, k, gx, modulus: n, length: width)
        let base = try HAPCrypto.modular(.difference, b, kgx, modulus: n, length: width)
        var nMinusOne = n
        nMinusOne[nMinusOne.count - 1] &-= 1  // N is odd: no borrow
        let ux = try HAPCrypto.modular(.product, u, x, modulus: nMinusOne, length: width)
        let exponent = try HAPCrypto.modular(.sum, privateKey, ux, modulus: nMinusOne, length: width)
        let s = try HAPCrypto.modular(.power, base, exponent, modulus: n, length: width)
        let sessionKey = try h(Self.minimal(s))
        let hn = try h(n)
        let hg = try h(Self.generator)
        let nXorG = zip(hn, hg).map { $0 ^ $1 }
        let a = Self.minimal(publicKey)
        let clientProof = try h(nXorG + h(Array(Self.username.utf8)) + salt + a + Self.minimal(serverPublicKey) + sessionKey)
        let serverProof = try h(a + clientProof + sessionKey)
        return Proofs(clientProof: clientProof, expectedServerProof: serverProof, sessionKey: sessionKey)
    }

    static func pad(_ value: [UInt8], to width: Int) -> [UInt8] {
        let trimmed = minimal(value)
        return [UInt8](repeating: 0, count: max(0, width - trimmed.count)) + trimmed
    }

    static func minimal(_ value: [UInt8]) -> [UInt8] {
        let trimmed = Array(value.drop { $0 == 0 })
        return trimmed.isEmpty ? [0] : trimmed
    }

    static func bytes(fromHex hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var high: UInt8?
        for character in hex.utf8 {
            let nibble: UInt8
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = character - UInt8(ascii: "0")
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = character - UInt8(ascii: "A") + 10
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = character - UInt8(ascii: "a") + 10
            default: continue
            }
            if let first = high {
                out.append(first << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        return out
    }
}
