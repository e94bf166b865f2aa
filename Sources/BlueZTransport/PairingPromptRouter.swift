import DBus
import Transport

/// Hands each question of BlueZ's agent to the handler of the pairing under way
/// for the device that asks. BlueZ has one agent per client, while several
/// devices may pair at once; a device nobody is pairing (a phone trying its
/// luck, say) is refused.
actor PairingPromptRouter: BlueZPairingHandler {
    private var handlers: [DBusObjectPath: any PairingPromptHandler] = [:]

    /// Sends the questions of `device` to `handler`; nil stops sending them anywhere.
    func route(_ device: DBusObjectPath, to handler: (any PairingPromptHandler)?) {
        handlers[device] = handler
    }

    nonisolated func answer(_ prompt: BlueZPairingPrompt) async -> PairingAnswer {
        guard let handler = await handlers[prompt.device] else { return .reject }
        return await handler.answer(prompt.prompt)
    }
}
