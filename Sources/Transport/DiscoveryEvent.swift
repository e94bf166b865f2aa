

/// What a transport's discovery reports.
public enum DiscoveryEvent: Sendable, Equatable {
    /// A new endpoint is reachable.
    case appeared(Endpoint)
    /// A known endpoint changed (signal strength, attributes, services).
    case updated(Endpoint)
    /// A known endpoint is gone; the value is its ``Endpoint/id``.
    case lost(endpointID: String)
    /// Discovery itself failed; the stream ends after this event.
    case failed(TransportError)
}
