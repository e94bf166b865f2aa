/// Where a device (through one protocol) is in its activation.
public enum ActivationState: String, Sendable, Hashable, Codable {
    case idle
    case activating
    case awaitingPairingCode
    case active
    case deactivating
}
