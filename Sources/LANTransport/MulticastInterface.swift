#if canImport(Glibc)
import Glibc
#endif
import IPNetwork
import Logging
import MediaClock
import Synchronization
import Transport

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
