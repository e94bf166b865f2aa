/// The controller's side of HAP pair-setup, as AirPlay 2 receivers run it on `POST /pair-setup`:
/// SRP with the setup code, then (unless transient) an exchange of long-term keys.
///
/// A value: ``start()`` gives the first message's body; ``receive(_:)`` takes each answer and
/// says what to send next or that pairing is done. Transient pairing (the receiver allows it:
/// HomePods, AirPlay 2 speakers, shairport-sync) uses the fixed code 3939 and ends after the
/// proofs (M4) with a session key and no stored keys; PIN pairing uses the code the receiver
/// shows and ends (M6) with the receiver's long-term identity to keep.
public struct PairSetup: Sendable {
    /// How to pair.
    public enum Mode: Sendable, Hashable {
        /// No PIN, nothing kept: each connection pairs again.
        case transient
        /// With the setup code (PIN) the receiver shows.
        case pin(String)
    }

    /// What the next step is.
    public enum Step: Sendable {
        /// Send this body to `/pair-setup`.
        case send([UInt8])
        /// Paired.
        case paired(PairSetupResult)
    }

    /// The fixed setup code of transient pairing.
    public static let transientCode = "3939"

    public let mode: Mode
    public let controller: ControllerIdentity?
    private var expectedState: UInt8 = 2
    private var srp: SRPClient?
    private var proofs: SRPClient.Proofs?

    /// - Parameter controller: our long-term identity; PIN pairing needs it, transient does not.
    public init(mode: Mode, controller: ControllerIdentity? = nil) {
        self.mode = mode
        self.controller = controller
    }

    /// M1: the method (pair-setup) and, for transient pairing, its flag.
    public func start() -> [UInt8] {
        var message = TLV8([(.state, [1]), (.method, [0])])
        if mode == .transient { message.append(.flags, [0x10]) }
        return message.bytes
    }

    /// Takes the receiver's answer to the last message.
    public mutating func receive(_ body: [UInt8]) throws(HAPError) -> Step {
        let message = try TLV8.answer(body, exchange: "pair-setup", state: expectedState)
        switch expectedState {
        case 2: return try answerChallenge(message)
        case 4: return try checkServerProof(message)
        case 6: return try takeReceiverIdentity(message)
        default: throw HAPError(.malformed, "pair-setup is over")
        }
    }

    private mutating func answerChallenge(_ message: TLV8) throws(HAPError) -> Step {
        guard let salt = message[.salt], !salt.isEmpty, salt.count <= 64, let serverKey = message[.publicKey] else {
            throw HAPError(.malformed, "pair-setup M2 without a salt and public key")
        }
        let client = try SRPClient()
        let code: String
        switch mode {
        case .transient: code = Self.transientCode
        case .pin(let pin): code = pin
        }
        let proofs = try client.proofs(salt: salt, serverPublicKey: serverKey, password: code)
        srp = client
        self.proofs = proofs
        expectedState = 4
        return .send(TLV8([(.state, [3]), (.publicKey, client.publicKey), (.proof, proofs.clientProof)]).bytes)
    }

    private mutating func checkServerProof(_ message: TLV8) throws(HAPError) -> Step {
        guard let proofs, let proof = message[.proof] else { throw HAPError(.malformed, "pair-setup M4 without the receiver's proof") }
        guard proof == proofs.expectedServerProof else { throw HAPError(.authenticationFailed, "the receiver's SRP proof does not match: it does not know the code") }
        if mode == .transient {
            expectedState = 0
            return .paired(PairSetupResult(sessionKey: proofs.sessionKey, receiver: nil))
        }
        guard let controller else { throw HAPError(.malformed, "PIN pairing needs the controller's identity") }
        let key = proofs.sessionKey
        let signingKey = try HAPCrypto.hkdfSHA512(secret: key, salt: Array("Pair-Setup-Controller-Sign-Salt".utf8), info: Array("Pair-Setup-Controller-Sign-Info".utf8))
        let identifier = Array(controller.identifier.utf8)
        let signature = try HAPCrypto.ed25519Sign(signingKey + identifier + controller.publicKey, secret: controller.secretKey, publicKey: controller.publicKey)
        let inner = TLV8([(.identifier, identifier), (.publicKey, controller.publicKey), (.signature, signature)])
        let sealed = try HAPCrypto.seal(inner.bytes, key: try encryptionKey(), nonce: Self.nonce("PS-Msg05"))
        expectedState = 6
        return .send(TLV8([(.state, [5]), (.encryptedData, sealed)]).bytes)
    }

    private mutating func takeReceiverIdentity(_ message: TLV8) throws(HAPError) -> Step {
        guard let proofs, let sealed = message[.encryptedData] else { throw HAPError(.malformed, "pair-setup M6 without encrypted data") }
        let inner = try TLV8(decoding: try HAPCrypto.open(sealed, key: try encryptionKey(), nonce: Self.nonce("PS-Msg06")))
        guard let identifier = inner[.identifier], let publicKey = inner[.publicKey], publicKey.count == 32, let signature = inner[.signature] else {
            throw HAPError(.malformed, "pair-setup M6 without the receiver's identifier, key and signature")
        }
        let signingKey = try HAPCrypto.hkdfSHA512(secret: proofs.sessionKey, salt: Array("Pair-Setup-Accessory-Sign-Salt".utf8), info: Array("Pair-Setup-Accessory-Sign-Info".utf8))
        guard try HAPCrypto.ed25519Verify(signature, of: signingKey + identifier + publicKey, publicKey: publicKey) else {
            throw HAPError(.authenticationFailed, "the receiver's signature over its long-term key does not check")
        }
        expectedState = 0
        let receiver = ReceiverIdentity(identifier: String(decoding: identifier, as: UTF8.self), publicKey: publicKey)
        return .paired(PairSetupResult(sessionKey: proofs.sessionKey, receiver: receiver))
    }

    private func encryptionKey() throws(HAPError) -> [UInt8] {
        guard let proofs else { throw HAPError(.malformed, "no session key yet") }
        return try HAPCrypto.hkdfSHA512(secret: proofs.sessionKey, salt: Array("Pair-Setup-Encrypt-Salt".utf8), info: Array("Pair-Setup-Encrypt-Info".utf8))
    }

    /// HAP's message nonces: four zero bytes and eight ASCII bytes ("PS-Msg05").
    static func nonce(_ label: String) -> [UInt8] {
        [0, 0, 0, 0] + Array(label.utf8.prefix(8))
    }
}
