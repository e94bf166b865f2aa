#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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

    /// A new identity: a random UUID and key pair.
    public static func generate() throws(HAPError) -> ControllerIdentity {
        let (secret, publicKey) = try HAPCrypto.ed25519KeyPair()
        return ControllerIdentity(identifier: UUID().uuidString, secretKey: secret, publicKey: publicKey)
    }
}
