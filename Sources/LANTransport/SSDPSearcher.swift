#if canImport(Glibc)
import Glibc
#endif
public import IPNetwork
public import Logging
public import MediaClock
import Synchronization
public import Transport

/// Sends SSDP `M-SEARCH` requests, one per interface: TTL 2, the multicast
/// `HOST: 239.255.255.250:1900` header real renderers require, `MX` seconds to answer.
public final class SSDPSearcher: Sendable {
    public static let group = UDPAddress(host: "239.255.255.250", port: 1900)

    public let searchTarget: String
    public let mx: Int
    private let logger: Logger
    private let sent = Mutex<[(interface: String, at: Duration)]>([])
    private let clock: any HostClock

    public init(searchTarget: String = "urn:schemas-upnp-org:device:MediaRenderer:1", mx: Int = 1, clock: any HostClock = SystemHostClock(),
                logger: Logger = Logger(label: "mediaroute.ssdp")) {
        self.searchTarget = searchTarget
        self.mx = mx
        self.clock = clock
        self.logger = logger
    }

    /// The request bytes.
    public var request: [UInt8] {
        Array("""
            M-SEARCH * HTTP/1.1\r
            HOST: 239.255.255.250:1900\r
            MAN: "ssdp:discover"\r
            MX: \(mx)\r
            ST: \(searchTarget)\r
            USER-AGENT: Linux UPnP/1.1 MediaRoute/0.1\r
            \r

            """.utf8)
    }

    /// Searches on one interface (its IPv4 address chooses the way out).
    /// - Throws: ``TransportError`` when the socket cannot be set up for that interface.
    public func search(on interface: MulticastInterface) throws(TransportError) {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TransportError(.discoveryFailed, "socket: errno \(errno)") }
        defer { close(fd) }
        var request = ip_mreqn()
        request.imr_ifindex = interface.index
        guard inet_pton(AF_INET, interface.address, &request.imr_address) == 1,
            setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_IF, &request, socklen_t(MemoryLayout<ip_mreqn>.size)) == 0
        else { throw TransportError(.discoveryFailed, "cannot send multicast on \(interface.name)") }
        var ttl: UInt8 = 2
        setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_TTL, &ttl, 1)
        var loop: UInt8 = 1  // receivers on this host hear it too
        setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_LOOP, &loop, 1)
        guard var target = Self.group.sockaddr else { throw TransportError(.discoveryFailed, "bad group address") }
        let bytes = self.request
        let result = withUnsafePointer(to: &target) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bytes.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, 0, address, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        guard result == bytes.count else { throw TransportError(.discoveryFailed, "M-SEARCH on \(interface.name): errno \(errno)") }
        sent.withLock { $0.append((interface.name, clock.now())) }
        logger.debug("M-SEARCH sent", metadata: ["interface": "\(interface.name)", "st": "\(searchTarget)"])
    }

    /// Searches on every current multicast interface; returns those it searched on.
    @discardableResult
    public func searchAll() -> [MulticastInterface] {
        MulticastInterface.current().filter { (try? search(on: $0)) != nil }
    }

    /// The interfaces searched on so far, with when (for tests and benchmarks).
    public var history: [(interface: String, at: Duration)] { sent.withLock { $0 } }
}
