import CNetlink
public import IOReactor
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Scans through nl80211: subscribes to the `scan` group **before** sending
/// `TRIGGER_SCAN` (so a fast `NEW_SCAN_RESULTS` cannot be missed), waits for
/// `NEW_SCAN_RESULTS` or `SCAN_ABORTED` for that interface, then dumps
/// `GET_SCAN`. Each wait for the kernel's answer is a wait on the process's
/// ``IOReactor``, with the timeout as its timer: no thread of its own.
public struct NL80211Scanner: WiFiScanning {
    public let family: NL80211Family
    /// Longest wait for the kernel to finish a scan.
    public var timeoutMilliseconds: Int32 = 15_000
    /// Our P2P element in P2P mode.
    public var p2pElement: [UInt8]

    let reactor: IOReactor

    public init(family: NL80211Family, reactor: IOReactor = .shared, p2pElement: [UInt8] = ScanRequest.p2pElement(deviceAddress: [0x02, 0, 0, 0, 0, 1], name: "MediaRoute")) {
        self.family = family
        self.reactor = reactor
        self.p2pElement = p2pElement
    }

    public func scan(interfaceIndex: UInt32, p2p: Bool) async throws(TransportUnavailable) -> [ScanResult] {
        try await scanResult(interfaceIndex: interfaceIndex, p2p: p2p).get()
    }

    private func scanResult(interfaceIndex: UInt32, p2p: Bool) async -> Result<[ScanResult], TransportUnavailable> {
        guard let group = family.groups["scan"] else { return .failure(TransportUnavailable("nl80211 has no scan group")) }
        guard let events = nl_socket_alloc(), let control = nl_socket_alloc() else { return .failure(TransportUnavailable("no netlink socket")) }
        defer {
            nl_socket_free(events)
            nl_socket_free(control)
        }
        nl_socket_disable_seq_check(events)
        guard genl_connect(events) == 0, genl_connect(control) == 0 else { return .failure(TransportUnavailable("generic netlink connect failed")) }
        // Subscribe first: the results may come before TRIGGER_SCAN's ack.
        guard nl_socket_add_membership(events, Int32(group)) == 0 else { return .failure(TransportUnavailable("cannot join the scan group")) }
        let trigger = NetlinkMessage(
            type: family.id, flags: UInt16(NLM_F_REQUEST | NLM_F_ACK), sequence: 1,
            payload: ScanRequest.trigger(interfaceIndex: interfaceIndex, p2p: p2p, p2pElement: p2pElement).bytes)
        if let failure = await sendAndAwaitAck(control, trigger) { return .failure(failure) }
        // Wait for this interface's scan to end.
        let eventsFD = nl_socket_get_fd(events)
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var done = false
        let scanDeadline = reactor.now + .milliseconds(timeoutMilliseconds)
        while !done {
            guard await reactor.readable(eventsFD, before: scanDeadline) else {
                return .failure(TransportUnavailable("scan did not finish in \(timeoutMilliseconds) ms"))
            }
            let n = buffer.withUnsafeMutableBytes { recv(eventsFD, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            guard n > 0, let messages = try? NetlinkMessage.parse(Array(buffer[0..<n])) else { continue }
            for message in messages where message.type == family.id {
                guard let payload = try? GenericNetlinkPayload.parse(message.payload),
                    (try? payload.attributes.first(UInt16(NL80211_ATTR_IFINDEX.rawValue))?.u32()) == interfaceIndex
                else { continue }
                if UInt32(payload.command) == NL80211_CMD_SCAN_ABORTED.rawValue { return .failure(TransportUnavailable("scan aborted")) }
                if UInt32(payload.command) == NL80211_CMD_NEW_SCAN_RESULTS.rawValue { done = true }
            }
        }
        // Dump.
        let dump = NetlinkMessage(
            type: family.id, flags: UInt16(NLM_F_REQUEST | NLM_F_DUMP), sequence: 2,
            payload: GenericNetlinkPayload(command: UInt8(NL80211_CMD_GET_SCAN.rawValue), version: 0, attributes: [
                NetlinkAttribute(type: UInt16(NL80211_ATTR_IFINDEX.rawValue), u32: interfaceIndex),
            ]).bytes)
        let controlFD = nl_socket_get_fd(control)
        guard dump.bytes.withUnsafeBytes({ send(controlFD, $0.baseAddress, $0.count, 0) }) > 0 else {
            return .failure(TransportUnavailable("cannot request the scan dump"))
        }
        var results: [ScanResult] = []
        while true {
            guard await reactor.readable(controlFD, before: reactor.now + .milliseconds(timeoutMilliseconds)) else {
                return .failure(TransportUnavailable("scan dump timed out"))
            }
            let n = buffer.withUnsafeMutableBytes { recv(controlFD, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n < 0 && (errno == EAGAIN || errno == EINTR) { continue }
            guard n > 0 else { return .failure(TransportUnavailable("scan dump failed")) }
            guard let messages = try? NetlinkMessage.parse(Array(buffer[0..<n])) else { return .failure(TransportUnavailable("malformed scan dump")) }
            for message in messages {
                if message.type == NetlinkMessage.done { return .success(results) }
                if message.type == NetlinkMessage.error { return .failure(TransportUnavailable("scan dump refused")) }
                // A malformed entry is skipped; the others are still good.
                if message.type == family.id, let payload = try? GenericNetlinkPayload.parse(message.payload),
                    let result = try? ScanResult.parse(payload) {
                    results.append(result)
                }
            }
        }
    }

    private func sendAndAwaitAck(_ socket: OpaquePointer, _ message: NetlinkMessage) async -> TransportUnavailable? {
        let fd = nl_socket_get_fd(socket)
        guard message.bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) > 0 else { return TransportUnavailable("cannot send TRIGGER_SCAN") }
        var buffer = [UInt8](repeating: 0, count: 4096)
        guard await reactor.readable(fd, before: reactor.now + .seconds(2)) else { return TransportUnavailable("no answer to TRIGGER_SCAN") }
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        guard n > 0, let reply = try? NetlinkMessage.parse(Array(buffer[0..<n])).first, reply.type == NetlinkMessage.error, reply.payload.count >= 4 else {
            return TransportUnavailable("bad answer to TRIGGER_SCAN")
        }
        let code = Int32(bitPattern: reply.payload.u32(at: 0))
        return code == 0 ? nil : TransportUnavailable("TRIGGER_SCAN refused: \(String(cString: strerror(-code)))")
    }
}
