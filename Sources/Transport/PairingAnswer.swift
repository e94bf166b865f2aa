

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
