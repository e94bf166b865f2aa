import Testing
@testable import HAP

/// libgcrypt's primitives through the shim, against the RFCs' published vectors (HKDF-SHA-512's
/// from Debian's python3-cryptography, RFC 5869 giving SHA-256 ones only).
@Suite struct HAPCryptoTests {
    static func hex(_ text: String) -> [UInt8] { SRPClient.bytes(fromHex: text) }

    @Test func sha512OfABCIsFIPSs() throws {
        #expect(try HAPCrypto.sha512(Array("abc".utf8)).prefix(8) == Self.hex("ddaf35a193617aba")[...])
    }

    @Test func sha1OfABCIsFIPSs() throws {
        #expect(try HAPCrypto.sha1(Array("abc".utf8)) == Self.hex("a9993e364706816aba3e25717850c26c9cd0d89d"))
    }

    /// Device verification's AES-128: vectors from Debian's python3-cryptography (OpenSSL), GCM
    /// with a 16-byte IV as the TVs use, CTR from a counter block whose low bytes carry over.
    @Test func aes128GCMAndCTRMatchAnIndependentImplementation() throws {
        let key = Array(UInt8(0)...UInt8(15)), iv = Array(UInt8(16)...UInt8(31))
        let sealed = try HAPCrypto.aes128GCMSeal(Array(32...63), key: key, iv: iv)
        #expect(sealed == Self.hex("e5bfd595599702affe31e9a98d0201f8c5cc12ac593391cf91bfbdad7f7e4ddf3fd958f0e3832fe2a020cab24a5b7c82"))
        #expect(try HAPCrypto.aes128GCMOpen(sealed, key: key, iv: iv) == Array(32...63))
        var forged = sealed
        forged[3] ^= 1
        #expect(throws: HAPError(.authenticationFailed, "the data's GCM tag does not match")) { try HAPCrypto.aes128GCMOpen(forged, key: key, iv: iv) }
        #expect(throws: HAPError.self) { try HAPCrypto.aes128GCMOpen(Array(sealed.prefix(15)), key: key, iv: iv) }
        #expect(throws: HAPError.self) { try HAPCrypto.aes128GCMSeal([1], key: Array(key.prefix(8)), iv: iv) }
        let counter = Array(UInt8(0xF0)...UInt8(0xFF))
        let encrypted = try HAPCrypto.aes128CTR(Array(0..<40), key: key, counter: counter)
        #expect(encrypted == Self.hex("66a6c5eb3057374f9f58d40c3f1ba3a2a290c513a38b2ababcb469a0728101f5f250b075587ecdba"))
        #expect(try HAPCrypto.aes128CTR(encrypted, key: key, counter: counter) == Array(0..<40))
    }

    @Test func hkdfSHA512MatchesAnIndependentImplementation() throws {
        let derived = try HAPCrypto.hkdfSHA512(secret: [UInt8](repeating: 0x0B, count: 22), salt: Array(0...12), info: Array(0xF0...0xF9), length: 42)
        #expect(derived == Self.hex("832390086cda71fb47625bb5ceb168e4c8e26a1a16ed34d9fc7fe92c1481579338da362cb8d9f925d7cb"))
    }

    @Test func chaCha20Poly1305IsRFC8439s() throws {
        let key = Array(UInt8(0x80)...UInt8(0x9F))
        let nonce = Self.hex("070000004041424344454647")
        let aad = Self.hex("50515253c0c1c2c3c4c5c6c7")
        let plaintext = Array("Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.".utf8)
        let sealed = try HAPCrypto.seal(plaintext, key: key, nonce: nonce, aad: aad)
        #expect(sealed.prefix(16) == Self.hex("d31a8d34648e60db7b86afbc53ef7ec2")[...])
        #expect(sealed.suffix(16) == Self.hex("1ae10b594f09e26a7e902ecbd0600691")[...])
        #expect(try HAPCrypto.open(sealed, key: key, nonce: nonce, aad: aad) == plaintext)
        var forged = sealed
        forged[3] ^= 1
        #expect(throws: HAPError.self) { try HAPCrypto.open(forged, key: key, nonce: nonce, aad: aad) }
        #expect(throws: HAPError.self) { try HAPCrypto.open(sealed, key: key, nonce: nonce, aad: []) }
        #expect(throws: HAPError.self) { try HAPCrypto.open(Array(sealed.prefix(15)), key: key, nonce: nonce) }
    }

    @Test func x25519IsRFC7748s() throws {
        let result = try HAPCrypto.x25519(
            scalar: Self.hex("a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4"),
            point: Self.hex("e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c"))
        #expect(result == Self.hex("c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552"))
        // A low-order point (all zeros) yields no secret: refused.
        #expect(throws: HAPError.self) { try HAPCrypto.x25519(scalar: Self.hex("a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4"), point: [UInt8](repeating: 0, count: 32)) }
        // Both sides of an exchange agree.
        let alice = [UInt8](repeating: 7, count: 32), bob = [UInt8](repeating: 9, count: 32)
        #expect(try HAPCrypto.x25519(scalar: alice, point: HAPCrypto.x25519(scalar: bob)) == HAPCrypto.x25519(scalar: bob, point: HAPCrypto.x25519(scalar: alice)))
    }

    @Test func ed25519IsRFC8032s() throws {
        let secret = Self.hex("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb")
        let publicKey = Self.hex("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c")
        let signature = try HAPCrypto.ed25519Sign([0x72], secret: secret, publicKey: publicKey)
        #expect(signature == Self.hex("92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"))
        #expect(try HAPCrypto.ed25519Verify(signature, of: [0x72], publicKey: publicKey))
        #expect(try !HAPCrypto.ed25519Verify(signature, of: [0x73], publicKey: publicKey))
        #expect(try !HAPCrypto.ed25519Verify(Array(signature.prefix(63)), of: [0x72], publicKey: publicKey))
        let (newSecret, newPublic) = try HAPCrypto.ed25519KeyPair()
        let mine = try HAPCrypto.ed25519Sign(Array("hello".utf8), secret: newSecret, publicKey: newPublic)
        #expect(try HAPCrypto.ed25519Verify(mine, of: Array("hello".utf8), publicKey: newPublic))
        #expect(try !HAPCrypto.ed25519Verify(mine, of: Array("hello".utf8), publicKey: publicKey))
    }

    @Test func modularArithmeticIsLibgcrypts() throws {
        #expect(try HAPCrypto.modular(.power, [2], [10], modulus: [0x03, 0xE8], length: 2) == [0, 24])
        #expect(try HAPCrypto.modular(.difference, [3], [5], modulus: [7], length: 1) == [5])
        #expect(try HAPCrypto.modular(.product, [0xFF], [0xFF], modulus: [0x01, 0x00, 0x01], length: 3) == [0x00, 0xFE, 0x01])
        #expect(throws: HAPError.self) { try HAPCrypto.modular(.sum, [1], [1], modulus: [], length: 1) }
        #expect(throws: HAPError.self) { try HAPCrypto.modular(.power, [2], [3], modulus: [0, 0], length: 2) }
        // A result wider than asked for is an error, never a truncation.
        #expect(throws: HAPError.self) { try HAPCrypto.modular(.sum, [0xFF], [0x01], modulus: [0x01, 0x00, 0x01], length: 1) }
    }
}
