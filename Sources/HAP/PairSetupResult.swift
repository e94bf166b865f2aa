/// What pair-setup yields: the SRP session key (transient pairing keys its channels with it)
/// and, after PIN pairing, the receiver's long-term identity to keep for pair-verify.
public struct PairSetupResult: Sendable {
    public var sessionKey: [UInt8]
    public var receiver: ReceiverIdentity?

    public init(sessionKey: [UInt8], receiver: ReceiverIdentity?) {
        self.sessionKey = sessionKey
        self.receiver = receiver
    }
}
