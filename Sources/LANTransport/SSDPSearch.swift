#if canImport(Glibc)
import Glibc
#endif
public import IPNetwork
public import Logging
public import MediaClock
import Synchronization
public import Transport

/// An IPv4 interface that can carry multicast.
public struct MulticastInterface: Sendable, Hashable {
    public var name: String
    public var index: Int32
    public var address: String
    /// The length of the subnet prefix (24 for a /24).
    public var prefixLength: Int

    public init(name: String, index: Int32, address: String, prefixLength: Int = 32) {
        self.name = name
        self.index = index
        self.address = address
        self.prefixLength = prefixLength
    }

    /// Whether `host` (dotted IPv4) is on this interface's subnet.
    public func contains(_ host: String) -> Bool {
        var mine = in_addr()
        var theirs = in_addr()
        guard inet_pton(AF_INET, address, &mine) == 1, inet_pton(AF_INET, host, &theirs) == 1 else { return false }
        let mask: UInt32 = prefixLength == 0 ? 0 : ~UInt32(0) << (32 - UInt32(min(prefixLength, 32)))
        return UInt32(bigEndian: mine.s_addr) & mask == UInt32(bigEndian: theirs.s_addr) & mask
    }

    /// The box's up, multicast-capable, non-loopback interfaces with an IPv4 address.
    public static func current() -> [MulticastInterface] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var found: [MulticastInterface] = []
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            let flags = Int32(entry.pointee.ifa_flags)
            guard let raw = entry.pointee.ifa_addr, raw.pointee.sa_family == sa_family_t(AF_INET),
                flags & Int32(IFF_UP) != 0, flags & Int32(IFF_MULTICAST) != 0, flags & Int32(IFF_LOOPBACK) == 0
            else { continue }
            let name = String(cString: entry.pointee.ifa_name)
            let address = raw.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UDPAddress($0.pointee).host }
            var prefix = 32
            if let mask = entry.pointee.ifa_netmask {
                prefix = mask.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr.s_addr.nonzeroBitCount }
            }
            found.append(MulticastInterface(name: name, index: Int32(if_nametoindex(name)), address: address, prefixLength: prefix))
        }
        return found
    }
}

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

/// Restarts SSDP discovery on an interface as soon as the network-changed hook
/// says it came up or got an IPv4 address, instead of waiting for the next periodic search.
public final class DiscoveryRestarter: Sendable {
    private let task: Task<Void, Never>

    public init(changes: AsyncStream<NetworkChange>, searcher: SSDPSearcher, logger: Logger = Logger(label: "mediaroute.lan")) {
        task = Task {
            for await change in changes {
                switch change {
                case .linkUp(_, let index), .addressAdded(_, let index, _), .wifiConnected(let index), .wifiRoamed(let index):
                    for interface in MulticastInterface.current() where interface.index == index {
                        do {
                            try searcher.search(on: interface)
                            logger.info("discovery restarted", metadata: ["interface": "\(interface.name)", "after": "\(change)"])
                        } catch {
                            logger.notice("discovery not restarted on \(interface.name): \(error)")
                        }
                    }
                case .linkDown, .addressRemoved, .wifiDisconnected:
                    continue
                }
            }
        }
    }

    /// Refreshes the transport's interface list on every link or address change:
    /// new interfaces are searched at once, gone ones drop their devices.
    public init(changes: AsyncStream<NetworkChange>, transport: LANTransport, logger: Logger = Logger(label: "mediaroute.lan")) {
        task = Task {
            for await change in changes {
                switch change {
                case .linkUp, .linkDown, .addressAdded, .addressRemoved, .wifiConnected, .wifiRoamed, .wifiDisconnected:
                    logger.debug("LAN interfaces refreshed", metadata: ["after": "\(change)"])
                    transport.refreshInterfaces()
                }
            }
        }
    }

    public func stop() { task.cancel() }
    deinit { task.cancel() }
}
