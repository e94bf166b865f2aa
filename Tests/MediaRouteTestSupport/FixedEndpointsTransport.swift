public import LANTransport
public import Transport

/// Announces fixed endpoints and connects through the LAN transport (with TLS where asked):
/// an extension against a test peer on loopback, without mDNS.
public struct FixedEndpointsTransport: Transport {
    public let endpoints: [Endpoint]
    public let tls: Bool
    private let lan = LANTransport()
    public var name: String { "lan" }

    public init(endpoints: [Endpoint], tls: Bool = false) {
        self.endpoints = endpoints
        self.tls = tls
    }

    public func discover() -> DiscoveryEvents {
        let (stream, continuation) = DiscoveryEvents.makeStream()
        for endpoint in endpoints { continuation.yield(.appeared(endpoint)) }
        return stream
    }

    public func connect(to endpoint: Endpoint) async throws(TransportError) -> any Connection {
        tls ? try await lan.connect(to: endpoint, tls: true) : try await lan.connect(to: endpoint)
    }
}
