#if canImport(Glibc)
package import Glibc
#endif

/// An IPv4 UDP endpoint ("host:port").
public struct UDPAddress: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: UInt16
    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }
    public var description: String { "\(host):\(port)" }

    /// The address for the socket calls; nil when the host is not an IPv4 literal.
    package var sockaddr: sockaddr_in? {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return nil }
        return address
    }

    package init(_ address: sockaddr_in) {
        var copy = address.sin_addr
        var buffer = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        inet_ntop(AF_INET, &copy, &buffer, socklen_t(INET_ADDRSTRLEN))
        host = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        port = UInt16(bigEndian: address.sin_port)
    }
}
