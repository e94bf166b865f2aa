#if canImport(Glibc)
import Glibc
#endif
import IPNetwork
import Logging
import MediaClock
import NIOCore
import NIOPosix
import Synchronization
public import Transport

/// The LAN seen through named DNS-SD service types only: discovery browses them over mDNS
/// (no SSDP), connections are the LAN's (TCP to the announced host and port, UDP to that
/// host). What an extension for an mDNS protocol (AirPlay, Cast) is given.
public struct DNSSDServiceTransport: Transport {
    public let lan: LANTransport
    public let serviceTypes: [String]
    /// Whether connections carry TLS (Cast's channel) rather than plain TCP (RAOP's RTSP).
    public let tls: Bool
    private let hub: DNSSDBrowseHub

    public init(lan: LANTransport, serviceTypes: [String], tls: Bool = false) {
        self.init(lan: lan, serviceTypes: serviceTypes, tls: tls, hub: DNSSDBrowseHub(lan: lan, serviceTypes: serviceTypes))
    }

    private init(lan: LANTransport, serviceTypes: [String], tls: Bool, hub: DNSSDBrowseHub) {
        self.lan = lan
        self.serviceTypes = serviceTypes
        self.tls = tls
        self.hub = hub
    }

    /// The same discovery, connecting with or without TLS: extensions given the copies share
    /// one browse (one set of mDNS sockets, each datagram read and counted once) and each
    /// keeps the service types it knows.
    public func sharingDiscovery(tls: Bool) -> DNSSDServiceTransport {
        DNSSDServiceTransport(lan: lan, serviceTypes: serviceTypes, tls: tls, hub: hub)
    }

    public var name: String { lan.name }

    public func discover() -> DiscoveryEvents { hub.subscribe() }

    public func connect(to endpoint: Endpoint) async throws(TransportError) -> any Connection {
        try await lan.connect(to: endpoint, tls: tls)
    }
}
