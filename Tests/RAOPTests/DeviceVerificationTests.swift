import Foundation
@testable import HAP
@testable import RAOP
import Testing

/// Device verification on bytes: what we send, and what a TV's malformed or forged answers do.
/// (A whole exchange against an independent receiver is in RAOPExtensionTests: the test
/// receiver's Python side.)
@Suite struct DeviceVerificationTests {
    /// RFC 8032's first test key pair.
    static let secret: [UInt8] = SRPClient.bytes(fromHex: "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
    static let publicKey: [UInt8] = SRPClient.bytes(fromHex: "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")

    private struct First: Decodable {
        var method: String
        var user: String
    }

    func setup() -> DeviceVerificationSetup {
        DeviceVerificationSetup(pin: "5072", username: DeviceVerificationSetup.username(for: Self.publicKey), secretKey: Self.secret, publicKey: Self.publicKey)
    }

    func plist(_ entries: [(String, BinaryPropertyList.Value)]) -> [UInt8] { BinaryPropertyList.encode(.dictionary(entries.map { (key: $0.0, value: $0.1) })) }

    @Test func theFirstBodyAsksForPINPairingAsOurUsername() throws {
        #expect(DeviceVerificationSetup.username(for: Self.publicKey) == "D7:5A:98:01:82:B1")
        let first = try PropertyListDecoder().decode(First.self, from: Data(setup().start()))
        #expect(first.method == "pin" && first.user == "D7:5A:98:01:82:B1")
    }

    @Test func malformedAndForgedAnswersAreTypedErrors() throws {
        func kind(_ answers: [[UInt8]]) -> HAPError.Kind? {
            var setup = setup()
            do {
                for answer in answers { _ = try setup.receive(answer) }
                return nil
            } catch {
                return error.kind
            }
        }
        let challenge = plist([("pk", .data([UInt8](repeating: 7, count: 256))), ("salt", .data(Array(0..<16)))])
        #expect(kind([Array("not a plist".utf8)]) == .malformed)
        #expect(kind([plist([("pk", .data([7]))])]) == .malformed, "no salt")
        #expect(kind([plist([("pk", .data([7])), ("salt", .data([]))])]) == .malformed, "an empty salt")
        #expect(kind([plist([("pk", .data(SRPClient.prime2048)), ("salt", .data([1]))])]) == .malformed, "B = N: 0 mod N forces the key")
        #expect(kind([plist([("pk", .data([UInt8](repeating: 7, count: 300))), ("salt", .data([1]))])]) == .malformed, "B wider than N")
        #expect(kind([challenge]) == nil)
        #expect(kind([challenge, plist([("proof", .data([UInt8](repeating: 0, count: 20)))])]) == .authenticationFailed, "a proof without the PIN")
        #expect(kind([challenge, plist([("nothing", .data([]))])]) == .malformed)
    }

    /// The sealing key and IV: SHA-512 of the label and K, 16 bytes each, the IV's last byte one more.
    @Test func theSetupKeyAndIVComeFromTheSessionKey() throws {
        let sessionKey = [UInt8](repeating: 0xAB, count: 40)
        let (key, iv) = try DeviceVerificationSetup.setupKey(sessionKey: sessionKey)
        #expect(key == Array(try HAPCrypto.sha512(Array("Pair-Setup-AES-Key".utf8) + sessionKey).prefix(16)))
        var plainIV = Array(try HAPCrypto.sha512(Array("Pair-Setup-AES-IV".utf8) + sessionKey).prefix(16))
        plainIV[15] &+= 1
        #expect(iv == plainIV)
    }

    /// The second body is our signature over both X25519 keys, encrypted with the keystream's
    /// bytes 64…127 (the first 64 spent on the TV's): the TV, knowing the shared secret, reads it.
    @Test func pairVerifySignsBothKeysUnderTheSharedKeystream() throws {
        var verification = try DeviceVerification(secretKey: Self.secret, publicKey: Self.publicKey, ephemeralSecret: [UInt8](repeating: 3, count: 32))
        let first = verification.start()
        #expect(first.count == 68 && first.prefix(4) == [1, 0, 0, 0] && Array(first[36...]) == Self.publicKey)
        #expect(Array(first[4..<36]) == verification.ephemeralPublicKey)
        let tvSecret = [UInt8](repeating: 9, count: 32)
        let tvPublic = try HAPCrypto.x25519(scalar: tvSecret)
        let step = try verification.receive(tvPublic + [UInt8](repeating: 0x55, count: 64))
        guard case .send(let second) = step else {
            Issue.record("pair-verify did not answer: \(step)")
            return
        }
        #expect(second.count == 68 && second.prefix(4) == [0, 0, 0, 0])
        let shared = try HAPCrypto.x25519(scalar: tvSecret, point: verification.ephemeralPublicKey)
        let (key, counter) = try DeviceVerification.verifyKey(sharedSecret: shared)
        let keystream = try HAPCrypto.aes128CTR([UInt8](repeating: 0, count: 128), key: key, counter: counter)
        let signature = zip(second.dropFirst(4), keystream[64...]).map { $0 ^ $1 }
        #expect(try HAPCrypto.ed25519Verify(signature, of: verification.ephemeralPublicKey + tvPublic, publicKey: Self.publicKey))
        #expect(try verification.receive([]) == .done, "the TV's 200 to the second body")
        #expect(throws: HAPError.self) { try verification.receive([]) }

        var short = try DeviceVerification(secretKey: Self.secret, publicKey: Self.publicKey)
        #expect(throws: HAPError.self) { try short.receive(tvPublic + [1, 2, 3]) }
        var lowOrder = try DeviceVerification(secretKey: Self.secret, publicKey: Self.publicKey)
        #expect(throws: HAPError.self, "a low-order point makes no shared secret") { try lowOrder.receive([UInt8](repeating: 0, count: 96)) }
    }
}
