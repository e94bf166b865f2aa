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

    /// Opens a connection to an endpoint found by this transport.
    /// - Throws: ``TransportError`` when the endpoint is unreachable or refuses.
    func connect(to endpoint: Endpoint) async throws -> any Connection
}

/// One open conversation with a device, carrying whole messages.
public protocol Connection: Sendable {
    /// The endpoint this connection reaches.
    var endpoint: Endpoint { get }

    /// Messages from the device in arrival order. The sequence finishes when
    /// the connection is closed by either side, and throws ``TransportError``
    /// when it fails (e.g. dropped mid-session).
    var incoming: AsyncThrowingStream<[UInt8], any Error> { get }

    /// Sends one message.
    /// - Throws: ``TransportError/closed`` after close, or the failure that ended the connection.
    func send(_ message: [UInt8]) async throws

    /// Closes the connection; `incoming` finishes. Idempotent.
    func close() async
}

/// A transport-level failure, typed so that extensions can map it to a device error.
public struct TransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public enum Code: String, Sendable, Hashable, Codable {
        /// The endpoint is not (or no longer) reachable.
        case unreachable
        /// The device refused the connection.
        case connectionRefused
        /// An open connection was lost.
        case connectionLost
        /// The connection was closed by us.
        case closed
        /// Discovery failed (adapter off, interface down, permission).
        case discoveryFailed
        /// The transport cannot run on this machine (missing kernel support, no bus).
        case unavailable
        /// A message was malformed or too large.
        case malformedMessage
        /// An operation took longer than allowed.
        case timedOut
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}

/// A change of the box's own network that should restart LAN discovery.
public enum NetworkChange: Sendable, Hashable {
    /// The link is up and has carrier.
    case linkUp(interface: String, index: Int32)
    /// The link went down, lost carrier, or was removed.
    case linkDown(interface: String, index: Int32)
    case addressAdded(interface: String, index: Int32, address: String)
    case addressRemoved(interface: String, index: Int32, address: String)
    /// nl80211: associated, disassociated, or roamed to another access point.
    case wifiConnected(index: Int32)
    case wifiDisconnected(index: Int32)
    case wifiRoamed(index: Int32)

    public var interfaceIndex: Int32 {
        switch self {
        case .linkUp(_, let index), .linkDown(_, let index), .addressAdded(_, let index, _), .addressRemoved(_, let index, _),
            .wifiConnected(let index), .wifiDisconnected(let index), .wifiRoamed(let index):
            index
        }
    }
}
