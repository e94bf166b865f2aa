/// The controller's side of HAP pair-verify (`POST /pair-verify`): on each connection to a
/// receiver paired before, both prove they hold the long-term keys pair-setup exchanged and
/// agree on a fresh X25519 secret for the connection's channels.
///
/// A receiver that answers with another identifier or key than the one kept for it is an
/// impostor or was reset: ``receive(_:)`` throws `.authenticationFailed` and nothing is sent.
public struct PairVerify: Sendable {
    public enum Step: Sendable {
        case send([UInt8])
        /// Verified: the connection's shared secret.
        case verified(sharedSecret: [UInt8])
    }

    public let controller: ControllerIdentity
    public let receiver: ReceiverIdentity
    private let secret: [UInt8]
    /// Our ephemeral X25519 public key.
    public let publicKey: [UInt8]
    private var expectedState: UInt8 = 2
    private var shared: [UInt8] = []

    public init(controller: ControllerIdentity, receiver: ReceiverIdentity) throws(HAPError) {
        var generator = SystemRandomNumberGenerator()
        try self.init(controller: controller, receiver: receiver, ephemeralSecret: (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    /// With a given ephemeral secret: tests.
    public init(controller: ControllerIdentity, receiver: ReceiverIdentity, ephemeralSecret: [UInt8]) throws(HAPError) {
        self.controller = controller
        self.receiver = receiver
        secret = ephemeralSecret
        publicKey = try HAPCrypto.x25519(scalar: ephemeralSecret)
    }

    /// M1: our ephemeral key.
    public func start() -> [UInt8] {
        TLV8([(.state, [1]), (.publicKey, publicKey)]).bytes
    }

    public mutating func receive(_ body: [UInt8]) throws(HAPError) -> Step {
        let message = try TLV8.answer(body, exchange: "pair-verify", state: expectedState)
        switch expectedState {
        case 2:
            guard let theirs = message[.publicKey], theirs.count == 32, let sealed = message[.encryptedData] else {
                throw HAPError(.malformed, "pair-verify M2 without the receiver's key and encrypted data")
            }
            shared = try HAPCrypto.x25519(scalar: secret, point: theirs)
            let key = try sessionKey()
            let inner = try TLV8(decoding: try HAPCrypto.open(sealed, key: key, nonce: PairSetup.nonce("PV-Msg02")))
            guard let identifier = inner[.identifier], let signature = inner[.signature] else {
                throw HAPError(.malformed, "pair-verify M2 without the receiver's identifier and signature")
            }
            guard identifier == Array(receiver.identifier.utf8) else {
                throw HAPError(.authenticationFailed, "the receiver answers as \(String(decoding: identifier, as: UTF8.self)), paired as \(receiver.identifier)")
            }
            guard try HAPCrypto.ed25519Verify(signature, of: theirs + identifier + publicKey, publicKey: receiver.publicKey) else {
                throw HAPError(.authenticationFailed, "the receiver's signature does not check against the key kept for it")
            }
            let ours = Array(controller.identifier.utf8)
            let mySignature = try HAPCrypto.ed25519Sign(publicKey + ours + theirs, secret: controller.secretKey, publicKey: controller.publicKey)
            let reply = try HAPCrypto.seal(TLV8([(.identifier, ours), (.signature, mySignature)]).bytes, key: key, nonce: PairSetup.nonce("PV-Msg03"))
            expectedState = 4
            return .send(TLV8([(.state, [3]), (.encryptedData, reply)]).bytes)
        case 4:
            expectedState = 0
            return .verified(sharedSecret: shared)
        default:
            throw HAPError(.malformed, "pair-verify is over")
        }
    }

    private func sessionKey() throws(HAPError) -> [UInt8] {
        try HAPCrypto.hkdfSHA512(secret: shared, salt: Array("Pair-Verify-Encrypt-Salt".utf8), info: Array("Pair-Verify-Encrypt-Info".utf8))
    }
}
