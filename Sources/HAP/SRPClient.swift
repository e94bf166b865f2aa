/// The controller's side of SRP-6a as HAP pairing uses it (RFC 5054's 3072-bit group,
/// generator 5, SHA-512, username "Pair-Setup"), or as the device verification Apple TVs ask
/// AirPlay 1 senders for (``Variant/deviceVerification``: RFC 5054's 2048-bit group, generator 2,
/// SHA-1, a session key of two hashes): from the receiver's salt and public key and the code,
/// our public key, our proof, and the session key once the receiver's proof checks.
///
/// The arithmetic is libgcrypt's (``HAPCrypto/modular(_:_:_:modulus:length:)``); the formulas
/// are RFC 5054's: k = H(N | PAD(g)), x = H(s | H(I ":" P)), u = H(PAD(A) | PAD(B)),
/// S = (B − k·gˣ)^(a + u·x) mod N, K = H(S), M1 = H(H(N) xor H(g) | H(I) | s | A | B | K),
/// M2 = H(A | M1 | K). Integers are hashed without leading zeros except where PAD says so
/// (as the receivers' implementations and PyPI's srptools do).
public struct SRPClient: Sendable {
    /// Which SRP the receiver runs.
    public enum Variant: Sendable, Hashable {
        /// HAP pair-setup (AirPlay 2).
        case hap
        /// Apple's device verification of AirPlay 1 senders (`/pair-setup-pin`, tvOS), with
        /// `username` (the sender's id): as OwnTone runs it, the salt is hashed without leading
        /// zeros and K = SHA-1(S | 00000000) | SHA-1(S | 00000001).
        case deviceVerification(username: String)

        var prime: [UInt8] { self == .hap ? SRPClient.prime : SRPClient.prime2048 }
        var generator: [UInt8] { self == .hap ? SRPClient.generator : [2] }
        var username: String {
            switch self {
            case .hap: SRPClient.username
            case .deviceVerification(let username): username
            }
        }

        func hash(_ data: [UInt8]) throws(HAPError) -> [UInt8] {
            self == .hap ? try HAPCrypto.sha512(data) : try HAPCrypto.sha1(data)
        }

        func sessionKey(_ s: [UInt8]) throws(HAPError) -> [UInt8] {
            let value = SRPClient.minimal(s)
            if self == .hap { return try hash(value) }
            return try hash(value + [0, 0, 0, 0]) + hash(value + [0, 0, 0, 1])
        }

        func hashedSalt(_ salt: [UInt8]) -> [UInt8] { self == .hap ? salt : SRPClient.minimal(salt) }
    }

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
    /// RFC 5054's 2048-bit prime (Appendix A), big-endian: device verification's group.
    public static let prime2048: [UInt8] = bytes(fromHex: """
        AC6BDB41324A9A9BF166DE5E1389582FAF72B6651987EE07FC3192943DB56050A37329CBB4A099ED8193E0757767A13DD5\
        2312AB4B03310DCD7F48A9DA04FD50E8083969EDB767B0CF6095179A163AB3661A05FBD5FAAAE82918A9962F0B93B855F9\
        7993EC975EEAA80D740ADBF4FF747359D041D5C33EA71D281E446B14773BCA97B43A23FB801676BD207A436C6481F1D2B9\
        078717461A5B9D32E688F87748544523B524B0D57D5EA77A2775D2ECFA032CFBDBF52FB3786160279004E57AE6AF874E73\
        03CE53299CCC041C7BC308D82A5698F3A8D0C38271AE35F8E9DBFBB694B5C803D89F7AE435DE236D525F54759B65E372FC\
        D68EF20FA7111F9E4AFF73
        """)
    public static let generator: [UInt8] = [5]
    public static let username = "Pair-Setup"

    public let variant: Variant
    /// Our public key A (as wide as the prime).
    public let publicKey: [UInt8]
    private let privateKey: [UInt8]

    /// A client with a fresh private key (32 random bytes).
    public init(_ variant: Variant = .hap) throws(HAPError) {
        var generator = SystemRandomNumberGenerator()
        try self.init(variant, privateKey: (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    /// A client with a given private key: tests, against published vectors.
    public init(_ variant: Variant = .hap, privateKey: [UInt8]) throws(HAPError) {
        self.variant = variant
        self.privateKey = privateKey
        publicKey = try HAPCrypto.modular(.power, variant.generator, privateKey, modulus: variant.prime, length: variant.prime.count)
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
        let n = variant.prime
        let g = variant.generator
        let width = n.count
        guard !serverPublicKey.isEmpty, serverPublicKey.count <= width else { throw HAPError(.malformed, "an SRP public key of \(serverPublicKey.count) bytes") }
        let b = try HAPCrypto.modular(.sum, serverPublicKey, [0], modulus: n, length: width)
        guard b.contains(where: { $0 != 0 }) else { throw HAPError(.malformed, "the receiver's SRP public key is 0 mod N") }
        let variant = variant
        func h(_ data: [UInt8]) throws(HAPError) -> [UInt8] { try variant.hash(data) }
        let k = try h(n + Self.pad(g, to: width))
        let u = try h(Self.pad(publicKey, to: width) + Self.pad(serverPublicKey, to: width))
        guard u.contains(where: { $0 != 0 }) else { throw HAPError(.malformed, "the SRP scrambler is 0") }
        let saltHashed = variant.hashedSalt(salt)
        let x = try h(saltHashed + h(Array("\(variant.username):\(password)".utf8)))
        // S = (B − k·g^x)^(a + u·x) mod N; the exponent may be reduced mod N − 1 (g's order divides it).
        let gx = try HAPCrypto.modular(.power, g, x, modulus: n, length: width)
        let kgx = try HAPCrypto.modular(.product, k, gx, modulus: n, length: width)
        let base = try HAPCrypto.modular(.difference, b, kgx, modulus: n, length: width)
        var nMinusOne = n
        nMinusOne[nMinusOne.count - 1] &-= 1  // N is odd: no borrow
        let ux = try HAPCrypto.modular(.product, u, x, modulus: nMinusOne, length: width)
        let exponent = try HAPCrypto.modular(.sum, privateKey, ux, modulus: nMinusOne, length: width)
        let s = try HAPCrypto.modular(.power, base, exponent, modulus: n, length: width)
        let sessionKey = try variant.sessionKey(s)
        let hn = try h(n)
        let hg = try h(g)
        let nXorG = zip(hn, hg).map { $0 ^ $1 }
        let a = Self.minimal(publicKey)
        let clientProof = try h(nXorG + h(Array(variant.username.utf8)) + saltHashed + a + Self.minimal(serverPublicKey) + sessionKey)
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
