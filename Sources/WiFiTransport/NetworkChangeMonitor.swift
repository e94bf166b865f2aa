import CNetlink
public import IOReactor
public import IPNetwork
public import Logging
import Synchronization
import Transport
#if canImport(Glibc)
import Glibc
#endif

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
