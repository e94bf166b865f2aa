/// What a device's pairing asks the person.
public enum PairingPrompt: Sendable, Hashable {
    /// Enter the six-digit passkey the device shows.
    case passkeyEntry
    /// Enter the device's PIN code (legacy pairing).
    case pinCodeEntry
    /// Show this passkey; the person types it on the device.
    case displayPasskey(UInt32)
    /// Show this PIN code; the person types it on the device.
    case displayPinCode(String)
    /// Does the device show this number too? Yes or no.
    case confirmation(passkey: UInt32)
    /// May this device pair (no code)?
    case authorization
}

/// The person's answer to a ``PairingPrompt``.
public enum PairingAnswer: Sendable, Hashable {
    /// A passkey or PIN (for the entry prompts).
    case code(String)
    /// Yes to a shown or confirmed code, or to an authorization.
    case accept
    case reject
    /// The question went away unanswered.
    case cancel
}

/// Answers the prompts of one pairing (the extension asks the person through the routing system).
public protocol PairingPromptHandler: Sendable {
    func answer(_ prompt: PairingPrompt) async -> PairingAnswer
}

/// Pairing with a connected device.
public protocol DevicePairing: Sendable {
    /// Whether the device is paired already.
    func isPaired() async -> Bool

    /// Pairs (when not yet paired) and trusts the device; the device's questions go
    /// to `handler` while this runs.
    /// - Throws: ``TransportError`` `authenticationFailed` for a wrong code or a refusal,
    ///   `timedOut` when nobody answered in time, `connectionLost` when the device went away.
    func pair(answering handler: any PairingPromptHandler) async throws(TransportError)
}
