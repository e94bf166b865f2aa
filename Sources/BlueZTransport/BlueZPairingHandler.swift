import DBus
import Logging
public import Transport

/// Answers the agent's questions (``BlueZTransport`` hands each to the pairing under way for that device).
public protocol BlueZPairingHandler: Sendable {
    func answer(_ prompt: BlueZPairingPrompt) async -> PairingAnswer
}
