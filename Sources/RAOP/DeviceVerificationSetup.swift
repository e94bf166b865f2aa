#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import HAP

/// The sender's side of the PIN pairing Apple TVs (tvOS 10.2 on) ask AirPlay 1 senders for
/// before they take a stream ("device verification", OwnTone's `pair_fruit`): `POST
/// /pair-pin-start` makes the TV show a PIN, then three exchanges of binary property lists on
/// `POST /pair-setup-pin` prove the PIN (SRP-6a, 2048-bit group, SHA-1) and hand the TV our
/// Ed25519 public key, sealed with AES-128-GCM under the SRP session key. The TV keeps that key;
/// later connections prove it with ``DeviceVerification`` (`/pair-verify`).
///
/// A value: ``start()`` gives the first body; ``receive(_:)`` takes each answer and says what
/// to send next or that the TV took our key. What the TV sends is decoded by FoundationEssentials'
/// property-list decoder from at most ``AirPlay2Setup/maximumBody`` bytes; anything else is a
/// typed ``HAPError``.
public struct DeviceVerificationSetup: Sendable {
    /// What the next step is.
    public enum Step: Sendable, Equatable {
        /// Send this body to `/pair-setup-pin`.
        case send([UInt8])
        /// The TV took our key: ``DeviceVerification`` proves it from now on.
        case paired
    }

    /// The `Content-Type` of `/pair-setup-pin`'s bodies.
    public static let contentType = "application/x-apple-binary-plist"

    public let pin: String
    /// Our id as the TV's SRP knows it (a hardware-address-like string, as OwnTone sends).
    public let username: String
    private let secretKey: [UInt8]
    private let publicKey: [UInt8]
    private var expected = 1
    private var srp: SRPClient?
    private var proofs: SRPClient.Proofs?

    /// - Parameters:
    ///   - secretKey, publicKey: our long-term Ed25519 key pair (32 bytes each), which the TV keeps.
    public init(pin: String, username: String, secretKey: [UInt8], publicKey: [UInt8]) {
        self.pin = pin
        self.username = username
        self.secretKey = secretKey
        self.publicKey = publicKey
    }

    /// The username for a controller key: its first six bytes written as a hardware address.
    public static func username(for publicKey: [UInt8]) -> String {
        publicKey.prefix(6).map { ($0 < 16 ? "0" : "") + String($0, radix: 16, uppercase: true) }.joined(separator: ":")
    }

    /// The first body: the method (PIN) and our username.
    public func start() -> [UInt8] {
        BinaryPropertyList.encode(.dictionary([("method", .string("pin")), ("user", .string(username))]))
    }

    private struct Challenge: Decodable {
        var pk: Data
        var salt: Data
    }

    private struct Proof: Decodable {
        var proof: Data
    }

    private struct SealedKey: Decodable {
        var epk: Data
        var authTag: Data
    }

    /// Takes the TV's answer to the last body.
    public mutating func receive(_ body: [UInt8]) throws(HAPError) -> Step {
        switch expected {
        case 1:
            let challenge = try Self.decode(Challenge.self, body, step: 1)
            guard !challenge.salt.isEmpty, challenge.salt.count <= 64 else { throw HAPError(.malformed, "pair-setup-pin: a salt of \(challenge.salt.count) bytes") }
            let client = try SRPClient(.deviceVerification(username: username))
            let proofs = try client.proofs(salt: Array(challenge.salt), serverPublicKey: Array(challenge.pk), password: pin)
            srp = client
            self.proofs = proofs
            expected = 2
            return .send(BinaryPropertyList.encode(.dictionary([("pk", .data(client.publicKey)), ("proof", .data(proofs.clientProof))])))
        case 2:
            guard let proofs else { throw HAPError(.malformed, "pair-setup-pin is out of order") }
            let proof = try Self.decode(Proof.self, body, step: 2)
            guard Array(proof.proof) == proofs.expectedServerProof else {
                throw HAPError(.authenticationFailed, "the TV's SRP proof does not match: the PIN was wrong")
            }
            let (key, iv) = try Self.setupKey(sessionKey: proofs.sessionKey)
            let sealed = try HAPCrypto.aes128GCMSeal(publicKey, key: key, iv: iv)
            expected = 3
            return .send(BinaryPropertyList.encode(.dictionary([("epk", .data(Array(sealed.prefix(32)))), ("authTag", .data(Array(sealed.suffix(16))))])))
        case 3:
            let sealed = try Self.decode(SealedKey.self, body, step: 3)
            guard sealed.epk.count == 32, sealed.authTag.count == 16 else { throw HAPError(.malformed, "pair-setup-pin: the TV's sealed key is not 32 + 16 bytes") }
            expected = 0
            return .paired
        default:
            throw HAPError(.malformed, "pair-setup-pin is over")
        }
    }

    /// The AES-128-GCM key and IV our public key is sealed with: the first 16 bytes of
    /// SHA-512("Pair-Setup-AES-Key" | K) and of SHA-512("Pair-Setup-AES-IV" | K), the IV's last
    /// byte one more (as the TVs and OwnTone have it).
    static func setupKey(sessionKey: [UInt8]) throws(HAPError) -> (key: [UInt8], iv: [UInt8]) {
        let key = Array(try HAPCrypto.sha512(Array("Pair-Setup-AES-Key".utf8) + sessionKey).prefix(16))
        var iv = Array(try HAPCrypto.sha512(Array("Pair-Setup-AES-IV".utf8) + sessionKey).prefix(16))
        iv[15] &+= 1
        return (key, iv)
    }

    static func decode<T: Decodable>(_ type: T.Type, _ body: [UInt8], step: Int) throws(HAPError) -> T {
        do {
            return try AirPlay2Setup.decode(type, from: body)
        } catch {
            throw HAPError(.malformed, "pair-setup-pin answer \(step): \(error)")
        }
    }
}
