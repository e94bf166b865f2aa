

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
