

/// A way of finding and reaching devices: LAN sockets, BlueZ, nl80211, loopback.
///
/// Nothing above the transport layer touches a socket, a D-Bus message or a
/// netlink attribute: extensions see only endpoints, discovery events and
/// connections.
public protocol Transport: Sendable {
    /// A short name for logs and ``Endpoint/transport`` (e.g. `loopback`).
    var name: String { get }

    /// Starts discovery. Endpoints already known are reported first as
    /// `.appeared`. Discovery stops when the consumer stops iterating
    /// (the stream is terminated or its task cancelled).
    func discover() -> DiscoveryEvents

    /// Opens a connection to an endpoint found by this transport. What the
    /// connection can carry is in its capabilities (``Connection/messages``,
    /// ``Connection/gatt``, ``Connection/audio``, ``Connection/pairing``).
    /// - Throws: ``TransportError``: `unreachable` or `connectionRefused` when the endpoint
    ///   cannot be reached, `unavailable` when this transport has no connections to offer
    ///   (LAN devices are reached by HTTP requests instead).
    func connect(to endpoint: Endpoint) async throws(TransportError) -> any Connection

    /// The ids (``Endpoint/id``) of the endpoints reachable now, as discovery would report
    /// them, read without discovering; nil when this transport cannot tell.
    ///
    /// An extension keeps the devices it found after discovery stops (a picker still shows
    /// them), but it hears nothing while stopped: a speaker whose adapter was unplugged in the
    /// meantime would stay listed. At the next start the extension asks this and drops what
    /// is no longer there (``DiscoveredDevices``' `loseUnconfirmed(present:to:)`).
    func presentEndpointIDs() async -> Set<String>?
}

extension Transport {
    /// Transports whose discovery reports everything again at each start need not answer.
    public func presentEndpointIDs() async -> Set<String>? { nil }
}
