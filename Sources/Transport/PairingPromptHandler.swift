

/// Answers the prompts of one pairing (the extension asks the person through the routing system).
public protocol PairingPromptHandler: Sendable {
    func answer(_ prompt: PairingPrompt) async -> PairingAnswer
}
