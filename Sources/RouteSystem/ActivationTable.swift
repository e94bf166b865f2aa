import RoutingModel

/// The activations under way, one per member of a device, and the moves between their
/// states: activating → awaiting a pairing code → activating → ended (a route, or a failure).
/// A move asked for another session than the one under way, or from another state, is
/// refused, so a late report of an old attempt cannot move a new one. The routing system
/// makes the calls and emits the events; this type holds the rules and the state.
struct ActivationTable {
    /// One activation: whose it is, where it is, who waits for it, and what runs for it.
    struct Activation {
        let session: MediaOutputSession
        var state: ActivationState
        var continuation: CheckedContinuation<ActiveRoute, any Error>?
        var timeout: Task<Void, Never>?
        var pairing: [Task<Void, Never>] = []
    }

    private var activations: [DeviceKey: Activation] = [:]

    /// The state of the activation of `key` under way; nil when none is.
    func state(of key: DeviceKey) -> ActivationState? { activations[key]?.state }

    /// Every member being activated, with its state.
    var states: [DeviceKey: ActivationState] { activations.mapValues(\.state) }

    /// Whether an activation of `key` is under way for `session`.
    func isUnderWay(_ key: DeviceKey, for session: MediaOutputSession) -> Bool { activations[key]?.session == session }

    /// Whether a member of the protocol `protocolID` is being activated.
    func isActivating(protocolID: String) -> Bool { activations.keys.contains { $0.protocolID == protocolID } }

    /// Starts activating `key` for `session`; `continuation` gets the route or the failure.
    /// - Throws: ``MediaDeviceError`` `activationInProgress` when one is under way already.
    mutating func begin(
        _ key: DeviceKey, session: MediaOutputSession, continuation: CheckedContinuation<ActiveRoute, any Error>?, name: String
    ) throws(MediaDeviceError) {
        guard activations[key] == nil else { throw MediaDeviceError(.activationInProgress, "\(name) is already being activated") }
        activations[key] = Activation(session: session, state: .activating, continuation: continuation)
    }

    /// Whether `key` is being activated at all (another session's included).
    func contains(_ key: DeviceKey) -> Bool { activations[key] != nil }

    /// Replaces the timeout of the activation of `key` (the old one is cancelled); the new
    /// one is cancelled at once when no activation is under way.
    mutating func setTimeout(_ key: DeviceKey, _ timeout: Task<Void, Never>) {
        guard activations[key] != nil else {
            timeout.cancel()
            return
        }
        activations[key]?.timeout?.cancel()
        activations[key]?.timeout = timeout
    }

    /// Moves an activating `key` of `session` to awaiting a pairing code, with the prompt's
    /// task and its timeout; false (and both cancelled) when no such activation is activating.
    mutating func awaitPairing(
        _ key: DeviceKey, session: MediaOutputSession, timeout: Task<Void, Never>, prompt: Task<Void, Never>
    ) -> Bool {
        guard var activation = activations[key], activation.session == session, activation.state == .activating else {
            timeout.cancel()
            prompt.cancel()
            return false
        }
        activation.state = .awaitingPairingCode
        activation.timeout?.cancel()
        activation.timeout = timeout
        activation.pairing.forEach { $0.cancel() }
        activation.pairing = [prompt]
        activations[key] = activation
        return true
    }

    /// Moves `key` of `session` from awaiting a code back to activating (the person answered);
    /// false when it was not awaiting one.
    mutating func pairingAnswered(_ key: DeviceKey, session: MediaOutputSession) -> Bool {
        guard let activation = activations[key], activation.session == session, activation.state == .awaitingPairingCode else {
            return false
        }
        activations[key]?.state = .activating
        return true
    }

    /// Ends the activation of `key`: its timeout and prompt are cancelled, and it is returned
    /// for the caller to resume its continuation; nil when none was under way.
    mutating func finish(_ key: DeviceKey) -> Activation? {
        guard let activation = activations.removeValue(forKey: key) else { return nil }
        activation.timeout?.cancel()
        activation.pairing.forEach { $0.cancel() }
        return activation
    }
}
