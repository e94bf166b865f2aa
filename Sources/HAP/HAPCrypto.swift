import CGcrypt

/// The primitives of HAP pairing and of the channels it keys: SHA-512, HMAC and HKDF over it,
/// ChaCha20-Poly1305, X25519, Ed25519 and modular arithmetic for SRP — all from libgcrypt,
/// opened at run time on first use (``open()``); HKDF (RFC 5869) is composed here from its HMAC,
/// libgcrypt 1.10 having none of its own.
public enum HAPCrypto {
    /// Opens libgcrypt (once per process); throws when the box has none.
    public static func open() throws(HAPError) {
        var message = [CChar](repeating: 0, count: 256)
        guard mr_gcry_open(&message, message.count) == 0 else {
            let text = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw HAPError(.cryptoUnavailable, "AirPlay 2 pairing needs libgcrypt 1.9 or later (Debian: libgcrypt20): \(text)")
        }
    }

    public static func sha512(_ data: [UInt8]) throws(HAPError) -> [UInt8] {
        try open()
        var digest = [UInt8](repeating: 0, count: 64)
        guard mr_gcry_sha512(data, data.count, &digest) == 0 else { throw failed("SHA-512") }
        return digest
    }

    /// SHA-1: only for the device verification Apple TVs ask AirPlay 1 senders for (its SRP).
    public static func sha1(_ data: [UInt8]) throws(HAPError) -> [UInt8] {
        try open()
        var digest = [UInt8](repeating: 0, count: 20)
        guard mr_gcry_sha1(data, data.count, &digest) == 0 else { throw failed("SHA-1") }
        return digest
    }

    public static func hmacSHA512(key: [UInt8], _ data: [UInt8]) throws(HAPError) -> [UInt8] {
        try open()
        var mac = [UInt8](repeating: 0, count: 64)
        guard mr_gcry_hmac_sha512(key, key.count, data, data.count, &mac) == 0 else { throw failed("HMAC-SHA-512") }
        return mac
    }

    /// HKDF-SHA-512 (RFC 5869): `length` bytes (at most 255 × 64) from `secret`.
    public static func hkdfSHA512(secret: [UInt8], salt: [UInt8], info: [UInt8], length: Int = 32) throws(HAPError) -> [UInt8] {
        guard length > 0, length <= 255 * 64 else { throw HAPError(.malformed, "HKDF cannot make \(length) bytes") }
        let pseudorandomKey = try hmacSHA512(key: salt.isEmpty ? [UInt8](repeating: 0, count: 64) : salt, secret)
        var output: [UInt8] = []
        var block: [UInt8] = []
        var counter: UInt8 = 1
        while output.count < length {
            block = try hmacSHA512(key: pseudorandomKey, block + info + [counter])
            output += block
            counter &+= 1
        }
        return Array(output.prefix(length))
    }

    /// ChaCha20-Poly1305 (RFC 8439): the ciphertext followed by its 16-byte tag.
    public static func seal(_ plaintext: [UInt8], key: [UInt8], nonce: [UInt8], aad: [UInt8] = []) throws(HAPError) -> [UInt8] {
        try open()
        guard key.count == 32, nonce.count == 12 else { throw HAPError(.malformed, "ChaCha20-Poly1305 takes a 32-byte key and a 12-byte nonce") }
        var output = [UInt8](repeating: 0, count: plaintext.count + 16)
        let status = output.withUnsafeMutableBufferPointer { out in
            mr_gcry_chacha20_poly1305_seal(key, nonce, aad, aad.count, plaintext, plaintext.count, out.baseAddress!, out.baseAddress! + plaintext.count)
        }
        guard status == 0 else { throw failed("ChaCha20-Poly1305") }
        return output
    }

    /// Opens what ``seal(_:key:nonce:aad:)`` made; throws `.authenticationFailed` when the tag
    /// does not match (forged or damaged), `.malformed` when shorter than a tag.
    public static func open(_ sealed: [UInt8], key: [UInt8], nonce: [UInt8], aad: [UInt8] = []) throws(HAPError) -> [UInt8] {
        try open()
        guard key.count == 32, nonce.count == 12 else { throw HAPError(.malformed, "ChaCha20-Poly1305 takes a 32-byte key and a 12-byte nonce") }
        guard sealed.count >= 16 else { throw HAPError(.malformed, "\(sealed.count) bytes are shorter than a Poly1305 tag") }
        let length = sealed.count - 16
        var output = [UInt8](repeating: 0, count: length)
        let status = sealed.withUnsafeBufferPointer { input in
            mr_gcry_chacha20_poly1305_open(key, nonce, aad, aad.count, input.baseAddress!, length, input.baseAddress! + length, &output)
        }
        if status == 1 { throw HAPError(.authenticationFailed, "the data's Poly1305 tag does not match") }
        guard status == 0 else { throw failed("ChaCha20-Poly1305") }
        return output
    }

    /// AES-128-GCM with an IV of any length (Apple's device verification uses 16 bytes): the
    /// ciphertext followed by its 16-byte tag.
    public static func aes128GCMSeal(_ plaintext: [UInt8], key: [UInt8], iv: [UInt8]) throws(HAPError) -> [UInt8] {
        try open()
        guard key.count == 16, !iv.isEmpty, iv.count <= 64 else { throw HAPError(.malformed, "AES-128-GCM takes a 16-byte key and an IV of 1 to 64 bytes") }
        var output = [UInt8](repeating: 0, count: plaintext.count + 16)
        let status = output.withUnsafeMutableBufferPointer { out in
            mr_gcry_aes128_gcm_seal(key, iv, iv.count, plaintext, plaintext.count, out.baseAddress!, out.baseAddress! + plaintext.count)
        }
        guard status == 0 else { throw failed("AES-128-GCM") }
        return output
    }

    /// Opens what ``aes128GCMSeal(_:key:iv:)`` made; throws `.authenticationFailed` when the tag
    /// does not match, `.malformed` when shorter than a tag.
    public static func aes128GCMOpen(_ sealed: [UInt8], key: [UInt8], iv: [UInt8]) throws(HAPError) -> [UInt8] {
        try open()
        guard key.count == 16, !iv.isEmpty, iv.count <= 64 else { throw HAPError(.malformed, "AES-128-GCM takes a 16-byte key and an IV of 1 to 64 bytes") }
        guard sealed.count >= 16 else { throw HAPError(.malformed, "\(sealed.count) bytes are shorter than a GCM tag") }
        let length = sealed.count - 16
        var output = [UInt8](repeating: 0, count: length)
        let status = sealed.withUnsafeBufferPointer { input in
            mr_gcry_aes128_gcm_open(key, iv, iv.count, input.baseAddress!, length, input.baseAddress! + length, &output)
        }
        if status == 1 { throw HAPError(.authenticationFailed, "the data's GCM tag does not match") }
        guard status == 0 else { throw failed("AES-128-GCM") }
        return output
    }

    /// AES-128-CTR from the 16-byte counter block `counter` (encryption and decryption are one).
    public static func aes128CTR(_ input: [UInt8], key: [UInt8], counter: [UInt8]) throws(HAPError) -> [UInt8] {
        try open()
        guard key.count == 16, counter.count == 16 else { throw HAPError(.malformed, "AES-128-CTR takes a 16-byte key and counter") }
        var output = [UInt8](repeating: 0, count: input.count)
        guard mr_gcry_aes128_ctr(key, counter, input, input.count, &output) == 0 else { throw failed("AES-128-CTR") }
        return output
    }

    /// X25519 (RFC 7748): `scalar` times the point `point` (the base point 9 for a public key).
    public static func x25519(scalar: [UInt8], point: [UInt8] = x25519BasePoint) throws(HAPError) -> [UInt8] {
        try open()
        guard scalar.count == 32, point.count == 32 else { throw HAPError(.malformed, "an X25519 key is 32 bytes") }
        var result = [UInt8](repeating: 0, count: 32)
        guard mr_gcry_x25519(scalar, point, &result) == 0 else { throw failed("X25519") }
        // An all-zero result is a low-order point a hostile peer sent: no shared secret.
        guard result.contains(where: { $0 != 0 }) else { throw HAPError(.authenticationFailed, "the peer's X25519 key is a low-order point") }
        return result
    }

    /// The X25519 base point (u = 9).
    public static let x25519BasePoint: [UInt8] = [9] + [UInt8](repeating: 0, count: 31)

    /// A new Ed25519 key pair: the 32-byte secret (RFC 8032's seed) and public key.
    public static func ed25519KeyPair() throws(HAPError) -> (secret: [UInt8], publicKey: [UInt8]) {
        try open()
        var secret = [UInt8](repeating: 0, count: 32)
        var publicKey = [UInt8](repeating: 0, count: 32)
        guard mr_gcry_ed25519_generate(&secret, &publicKey) == 0 else { throw failed("Ed25519 key generation") }
        return (secret, publicKey)
    }

    public static func ed25519Sign(_ message: [UInt8], secret: [UInt8], publicKey: [UInt8]) throws(HAPError) -> [UInt8] {
        try open()
        guard secret.count == 32, publicKey.count == 32 else { throw HAPError(.malformed, "an Ed25519 key is 32 bytes") }
        var signature = [UInt8](repeating: 0, count: 64)
        guard mr_gcry_ed25519_sign(secret, publicKey, message, message.count, &signature) == 0 else { throw failed("Ed25519 signing") }
        return signature
    }

    /// Whether `signature` is `publicKey`'s over `message` (a malformed key or signature is not).
    public static func ed25519Verify(_ signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) throws(HAPError) -> Bool {
        try open()
        guard signature.count == 64, publicKey.count == 32 else { return false }
        return mr_gcry_ed25519_verify(publicKey, message, message.count, signature) == 0
    }

    /// Modular arithmetic on unsigned big-endian integers, the result `length` bytes wide.
    public enum ModularOperation: Sendable { case power, product, sum, difference }

    public static func modular(_ operation: ModularOperation, _ a: [UInt8], _ b: [UInt8], modulus: [UInt8], length: Int) throws(HAPError) -> [UInt8] {
        try open()
        guard length > 0, length <= 1024, !modulus.isEmpty else { throw HAPError(.malformed, "modular arithmetic wider than 8192 bits") }
        var result = [UInt8](repeating: 0, count: length)
        let code: Int32 = switch operation {
        case .power: Int32(MR_GCRY_POWER)
        case .product: Int32(MR_GCRY_PRODUCT)
        case .sum: Int32(MR_GCRY_SUM)
        case .difference: Int32(MR_GCRY_DIFFERENCE)
        }
        let status = mr_gcry_modular(code, a, a.count, b, b.count, modulus, modulus.count, &result, length)
        guard status == 0 else { throw failed("modular arithmetic") }
        return result
    }

    private static func failed(_ what: String) -> HAPError { HAPError(.cryptoUnavailable, "libgcrypt refused \(what)") }
}
