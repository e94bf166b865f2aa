import RoutingModel
public import Transport

/// The devices an extension has reported from its transport's discovery.
///
/// Every extension turns discovery events into the same routing-manager calls:
/// a new endpoint is `foundDevice`, a known one `updateDevices`, a lost one
/// `lostDevice`, a failure `discoveryFailed`. This keeps that bookkeeping in one place.
public struct DiscoveredDevices: Sendable {
    private var known: [String: MediaOutputDevice] = [:]
    /// Devices kept from an earlier discovery run that this run has not reported yet.
    private var unconfirmed: Set<String> = []

    public init() {}

    /// Applies one discovery event; `device` makes a device of an endpoint (nil: not ours).
    /// - Returns: the transport's error when discovery failed (and so ended).
    @discardableResult
    public mutating func apply(
        _ event: DiscoveryEvent, to routingManager: MediaDeviceRoutingManager, failurePrefix: String = "",
        device: (Endpoint) -> MediaOutputDevice?
    ) -> TransportError? {
        switch event {
        case .appeared(let endpoint), .updated(let endpoint):
            guard let device = device(endpoint) else { return nil }
            unconfirmed.remove(device.id)
            let isNew = known.updateValue(device, forKey: device.id) == nil
            if isNew { routingManager.foundDevice(device) } else { routingManager.updateDevices([device]) }
        case .lost(let endpointID):
            unconfirmed.remove(endpointID)
            if let device = known.removeValue(forKey: endpointID) { routingManager.lostDevice(device) }
        case .failed(let error):
            routingManager.discoveryFailed(MediaDeviceError(.discoveryFailed, failurePrefix + error.message))
            return error
        }
        return nil
    }

    /// A discovery run starts: every device kept from before is in doubt until the run reports it.
    public mutating func beginRun() {
        unconfirmed = Set(known.keys)
    }

    /// Loses the devices kept from before that the run has not reported and that are not
    /// `present` (``Transport/presentEndpointIDs()``): gone while discovery was stopped. A device reported
    /// by the run in the meantime stays, whatever `present` (read earlier) says.
    public mutating func loseUnconfirmed(present: Set<String>, to routingManager: MediaDeviceRoutingManager) {
        for id in unconfirmed.subtracting(present).sorted() {
            if let device = known.removeValue(forKey: id) { routingManager.lostDevice(device) }
        }
        unconfirmed = []
    }
}
