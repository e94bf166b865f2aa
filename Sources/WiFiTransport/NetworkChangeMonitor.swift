import CNetlink
public import IOReactor
public import IPNetwork
public import Logging
import Synchronization
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// Turns rtnetlink (and nl80211 MLME) messages into ``NetworkChange``s, keeping
/// each link's last state so that only transitions are reported. Pure: feed it bytes.
public struct NetworkChangeDecoder: Sendable {
    private var links: [Int32: (name: String, usable: Bool)] = [:]
    /// The nl80211 family id when its MLME group is followed.
    public var nl80211FamilyID: UInt16?

    public init(nl80211FamilyID: UInt16? = nil) {
        self.nl80211FamilyID = nl80211FamilyID
    }

    static let newLink: UInt16 = 16, deleteLink: UInt16 = 17, newAddress: UInt16 = 20, deleteAddress: UInt16 = 21
    static let ifnameAttribute: UInt16 = 3
    static let addressAttribute: UInt16 = 1, localAttribute: UInt16 = 2

    /// The changes in one datagram.
    public mutating func decode(_ bytes: [UInt8]) throws(NetlinkParseError) -> [NetworkChange] {
        var changes: [NetworkChange] = []
        for message in try NetlinkMessage.parse(bytes) {
            switch message.type {
            case Self.newLink, Self.deleteLink:
                guard message.payload.count >= 16 else { throw NetlinkParseError(.truncated, "ifinfomsg") }
                let index = Int32(bitPattern: message.payload.u32(at: 4))
                let flags = message.payload.u32(at: 8)
                let attributes = try NetlinkAttribute.parse(Array(message.payload[16...]))
                let name = attributes.first(Self.ifnameAttribute)?.string ?? links[index]?.name ?? "if\(index)"
                let usable = message.type == Self.newLink && flags & UInt32(MR_IFF_UP) != 0 && flags & UInt32(MR_IFF_RUNNING) != 0
                let before = links[index]?.usable ?? false
                if message.type == Self.deleteLink { links.removeValue(forKey: index) } else { links[index] = (name, usable) }
                if usable && !before { changes.append(.linkUp(interface: name, index: index)) }
                if !usable && before { changes.append(.linkDown(interface: name, index: index)) }
            case Self.newAddress, Self.deleteAddress:
                guard message.payload.count >= 8 else { throw NetlinkParseError(.truncated, "ifaddrmsg") }
                let family = message.payload[0]
                let index = Int32(bitPattern: message.payload.u32(at: 4))
                let attributes = try NetlinkAttribute.parse(Array(message.payload[8...]))
                guard let raw = (attributes.first(Self.localAttribute) ?? attributes.first(Self.addressAttribute))?.value else { continue }
                let address = Self.format(raw, family: family)
                let name = links[index]?.name ?? "if\(index)"
                changes.append(message.type == Self.newAddress
                    ? .addressAdded(interface: name, index: index, address: address)
                    : .addressRemoved(interface: name, index: index, address: address))
            case let type where type == nl80211FamilyID:
                let payload = try GenericNetlinkPayload.parse(message.payload)
                guard let index = try payload.attributes.first(UInt16(NL80211_ATTR_IFINDEX.rawValue))?.u32() else { continue }
                switch UInt32(payload.command) {
                case NL80211_CMD_CONNECT.rawValue: changes.append(.wifiConnected(index: Int32(bitPattern: index)))
                case NL80211_CMD_DISCONNECT.rawValue: changes.append(.wifiDisconnected(index: Int32(bitPattern: index)))
                case NL80211_CMD_ROAM.rawValue: changes.append(.wifiRoamed(index: Int32(bitPattern: index)))
                default: break
                }
            default:
                continue
            }
        }
        return changes
    }

    static func format(_ raw: [UInt8], family: UInt8) -> String {
        if family == UInt8(AF_INET), raw.count == 4 { return raw.map(String.init).joined(separator: ".") }
        guard raw.count == 16 else { return raw.map(hex).joined() }
        var groups: [String] = []
        for index in stride(from: 0, to: 16, by: 2) { groups.append(String(UInt16(raw[index]) << 8 | UInt16(raw[index + 1]), radix: 16)) }
        return groups.joined(separator: ":")
    }
}

/// Follows the box's links and addresses through rtnetlink (libnl socket, the
/// link and IPv4/IPv6 address groups) and, where the kernel has nl80211, its
/// MLME events, watched by the process's ``IOReactor`` until the kernel speaks.
/// ``changes`` is the one "network changed" hook transports subscribe to.
public final class NetworkChangeMonitor: Sendable {
    public let changes: AsyncStream<NetworkChange>
    private let continuation: AsyncStream<NetworkChange>.Continuation
    private let stopped = Atomic<Bool>(false)
    private let watches: [IOWatch]
    private let sockets: Sockets

    private final class Sockets: @unchecked Sendable {
        // Safe: created in init; afterwards only the reactor thread uses them (the
        // watches' handlers, then the cancellation that frees them), one call at a time.
        let route: OpaquePointer
        let mlme: OpaquePointer?
        init(route: OpaquePointer, mlme: OpaquePointer?) {
            self.route = route
            self.mlme = mlme
        }
    }

    /// What the handlers keep between reads (the reactor calls them one at a time).
    private struct Reading {
        var decoder: NetworkChangeDecoder
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    }

    /// - Throws: ``TransportUnavailable`` when rtnetlink cannot be opened.
    public init(reactor: IOReactor = .shared, logger: Logger = Logger(label: "mediaroute.netlink")) throws(TransportUnavailable) {
        guard let route = nl_socket_alloc() else { throw TransportUnavailable("cannot allocate a netlink socket") }
        nl_socket_disable_seq_check(route)
        let connected = nl_connect(route, MR_NETLINK_ROUTE)
        guard connected == 0 else {
            nl_socket_free(route)
            throw TransportUnavailable("rtnetlink: \(String(cString: nl_geterror(connected)))")
        }
        for group in [MR_RTNLGRP_LINK, MR_RTNLGRP_IPV4_IFADDR, MR_RTNLGRP_IPV6_IFADDR] { _ = nl_socket_add_membership(route, group) }
        nl_socket_set_nonblocking(route)
        var familyID: UInt16?
        var mlme: OpaquePointer?
        if case .success(let family) = NL80211Family.resolve(), let group = family.groups["mlme"], let socket = nl_socket_alloc() {
            nl_socket_disable_seq_check(socket)
            if genl_connect(socket) == 0, nl_socket_add_membership(socket, Int32(group)) == 0 {
                nl_socket_set_nonblocking(socket)
                mlme = socket
                familyID = family.id
            } else {
                nl_socket_free(socket)
            }
        } else {
            logger.info("no nl80211: Wi-Fi connect/roam events are not followed; links and addresses are")
        }
        let (stream, continuation) = AsyncStream.makeStream(of: NetworkChange.self, bufferingPolicy: .bufferingNewest(1024))
        changes = stream
        self.continuation = continuation
        let sockets = Sockets(route: route, mlme: mlme)
        self.sockets = sockets
        let reading = Mutex(Reading(decoder: NetworkChangeDecoder(nl80211FamilyID: familyID)))
        var watches: [IOWatch] = []
        for socket in [route, mlme].compactMap({ $0 }) {
            let fd = nl_socket_get_fd(socket)
            do {
                watches.append(try reactor.watch(fd, for: .readable) { _ in
                    reading.withLock { Self.drain(fd, into: &$0, continuation: continuation, logger: logger) }
                })
            } catch {
                for watch in watches { watch.cancel() }
                nl_socket_free(route)
                if let mlme { nl_socket_free(mlme) }
                throw TransportUnavailable("cannot watch netlink: \(error)")
            }
        }
        self.watches = watches
    }

    /// Reads and decodes everything queued on `fd`.
    private static func drain(_ fd: Int32, into reading: inout Reading, continuation: AsyncStream<NetworkChange>.Continuation, logger: Logger) {
        while true {
            let n = reading.buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n <= 0 {
                if n < 0 && errno == ENOBUFS {
                    logger.warning("netlink overrun: some network changes were dropped")
                    continue
                }
                return
            }
            do {
                for change in try reading.decoder.decode(Array(reading.buffer[0..<n])) { continuation.yield(change) }
            } catch {
                logger.warning("malformed netlink message ignored: \(error)")
            }
        }
    }

    /// Stops watching; ``changes`` finishes.
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let sockets = sockets, continuation = continuation
        for watch in watches.dropLast() { watch.cancel() }
        watches.last?.cancel {
            continuation.finish()
            nl_socket_free(sockets.route)
            if let mlme = sockets.mlme { nl_socket_free(mlme) }
        }
    }

    deinit { stop() }
}
