/// Answers pairing prompts: a UI, a CLI prompt, a D-Bus agent.
public protocol PairingAgent: Sendable {
    /// The person's code, or nil when they cancelled. The system enforces its own timeout.
    func pairingCode(for request: PairingRequest) async -> String?
}
