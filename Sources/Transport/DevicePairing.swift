

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
