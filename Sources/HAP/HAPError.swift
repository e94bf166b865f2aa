/// Why a pairing step or an encrypted frame failed: what the receiver sent cannot be used,
/// it refused us, or the crypto library is missing. Every decoder of the receiver's bytes
/// throws this, never traps.
public struct HAPError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure, for code that acts on it (ask for a PIN again, forget the keys).
    public enum Kind: Sendable, Hashable {
        /// The bytes are not what the protocol allows (TLV8, a frame, a message out of order).
        case malformed
        /// The receiver said no: its `kTLVError` code (2: wrong PIN, 3: back off, 4: too many
        /// controllers, 6: busy) — see ``ReceiverRefusal``.
        case refused(UInt8)
        /// A proof, a signature or a tag did not check: a wrong PIN, forgotten keys, an impostor
        /// or damaged data.
        case authenticationFailed
        /// libgcrypt could not be opened or refused an operation.
        case cryptoUnavailable
    }

    public var kind: Kind
    public var description: String

    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }
}
