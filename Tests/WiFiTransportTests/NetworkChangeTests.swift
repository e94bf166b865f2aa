import Foundation
import IPNetwork
import LANTransport
import MediaRouteTestSupport
import Testing
import Transport
@testable import WiFiTransport
import MediaRouteTesting

/// rtnetlink messages built byte for byte.
enum RouteBytes {
    static func link(_ type: UInt16, index: Int32, name: String, up: Bool, running: Bool) -> [UInt8] {
        var payload: [UInt8] = [0, 0, 1, 0]  // family, pad, ARPHRD_ETHER
        payload.appendLE(UInt32(bitPattern: index))
        payload.appendLE(UInt32((up ? 0x1 : 0) | (running ? 0x40 : 0) | 0x1000))  // IFF_UP, IFF_RUNNING, IFF_MULTICAST
        payload.appendLE(UInt32(0xFFFF_FFFF))
        payload += NetlinkAttribute(type: 3, value: Array(name.utf8) + [0]).bytes
        return NetlinkMessage(type: type, payload: payload).bytes
    }

    static func address(_ type: UInt16, index: Int32, ipv4: [UInt8]) -> [UInt8] {
        var payload: [UInt8] = [2, 24, 0, 0]  // AF_INET, /24
        payload.appendLE(UInt32(bitPattern: index))
        payload += NetlinkAttribute(type: 2, value: ipv4).bytes
        return NetlinkMessage(type: type, payload: payload).bytes
    }
}

extension Array where Element == UInt8 {
    mutating func appendLE(_ value: UInt32) { for shift in stride(from: 0, to: 32, by: 8) { append(UInt8((value >> UInt32(shift)) & 0xFF)) } }
}

@Suite struct NetworkChangeDecoderTests {
    @Test func transitionsOnlyAndAddresses() throws {
        var decoder = NetworkChangeDecoder(nl80211FamilyID: Bytes.familyID)
        #expect(try decoder.decode(RouteBytes.link(16, index: 7, name: "wlan0", up: true, running: false)) == [])
        #expect(try decoder.decode(RouteBytes.link(16, index: 7, name: "wlan0", up: true, running: true)) == [.linkUp(interface: "wlan0", index: 7)])
        // The same state again (the kernel resends for many reasons): nothing.
        #expect(try decoder.decode(RouteBytes.link(16, index: 7, name: "wlan0", up: true, running: true)) == [])
        #expect(try decoder.decode(RouteBytes.address(20, index: 7, ipv4: [198, 51, 100, 1]))
            == [.addressAdded(interface: "wlan0", index: 7, address: "198.51.100.1")])
        let connect = NetlinkMessage(type: Bytes.familyID, payload: GenericNetlinkPayload(command: 46, attributes: [
            NetlinkAttribute(type: 3, u32: 7),
        ]).bytes).bytes
        let roam = NetlinkMessage(type: Bytes.familyID, payload: GenericNetlinkPayload(command: 47, attributes: [NetlinkAttribute(type: 3, u32: 7)]).bytes).bytes
        // Several messages in one datagram.
        #expect(try decoder.decode(connect + roam) == [.wifiConnected(index: 7), .wifiRoamed(index: 7)])
        #expect(try decoder.decode(RouteBytes.address(21, index: 7, ipv4: [198, 51, 100, 1]))
            == [.addressRemoved(interface: "wlan0", index: 7, address: "198.51.100.1")])
        #expect(try decoder.decode(RouteBytes.link(17, index: 7, name: "wlan0", up: false, running: false)) == [.linkDown(interface: "wlan0", index: 7)])
        // Malformed: a truncated ifinfomsg.
        #expect(throws: NetlinkParseError.self) { _ = try decoder.decode(NetlinkMessage(type: 16, payload: [1, 2, 3]).bytes) }
    }
}

/// A network namespace with a veth pair: `outside` in ours, `inside` in the namespace.
final class VethNamespace: Sendable {
    let namespace: String
    let outside: String
    let inside: String

    static var available: Bool {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") else {
            print("skipping: network namespaces need root and /usr/sbin/ip (apt-get install iproute2)")
            return false
        }
        return true
    }

    init() throws {
        let suffix = String(UUID().uuidString.prefix(4)).lowercased()
        namespace = "mrns\(suffix)"
        outside = "mrw\(suffix)a"
        inside = "mrw\(suffix)b"
        try Self.ip(["netns", "add", namespace])
        try Self.ip(["link", "add", outside, "type", "veth", "peer", "name", inside])
        try Self.ip(["link", "set", inside, "netns", namespace])
        try Self.ip(["-n", namespace, "addr", "add", "198.51.100.2/24", "dev", inside])
        try Self.ip(["-n", namespace, "link", "set", inside, "up"])
    }

    static func ip(_ arguments: [String]) throws {
        let (status, output) = try ChildProcess.run(["/usr/sbin/ip"] + arguments)
        guard status == 0 else { throw PrivateBusError(message: "ip \(arguments.joined(separator: " ")): \(output)") }
    }

    deinit {
        _ = try? ChildProcess.run(["/usr/sbin/ip", "link", "del", outside])
        _ = try? ChildProcess.run(["/usr/sbin/ip", "netns", "del", namespace])
    }
}

@Suite(.timeLimit(.minutes(1)), .enabled(if: VethNamespace.available))
struct NetworkChangeMonitorTests {
    @Test func theHookFiresWithTheRightInterface() async throws {
        let monitor = try NetworkChangeMonitor()
        defer { monitor.stop() }
        let veth = try VethNamespace()
        let seen = Locked<[NetworkChange]>([])
        let follower = Task { for await change in monitor.changes { seen.withLock { $0.append(change) } } }
        defer { follower.cancel() }
        let index = Int32(if_nametoindex(veth.outside))
        try VethNamespace.ip(["link", "set", veth.outside, "up"])
        #expect(await eventually { seen.value.contains(.linkUp(interface: veth.outside, index: index)) })
        try VethNamespace.ip(["addr", "add", "198.51.100.1/24", "dev", veth.outside])
        #expect(await eventually { seen.value.contains(.addressAdded(interface: veth.outside, index: index, address: "198.51.100.1")) })
        try VethNamespace.ip(["addr", "del", "198.51.100.1/24", "dev", veth.outside])
        #expect(await eventually { seen.value.contains(.addressRemoved(interface: veth.outside, index: index, address: "198.51.100.1")) })
        try VethNamespace.ip(["link", "set", veth.outside, "down"])
        #expect(await eventually { seen.value.contains(.linkDown(interface: veth.outside, index: index)) })
        // In order, and each transition once (the kernel resends link messages for many reasons).
        let ours = seen.value.filter { $0.interfaceIndex == index }
        #expect(ours.first == .linkUp(interface: veth.outside, index: index))
        #expect(ours.filter { $0 == .linkUp(interface: veth.outside, index: index) }.count == 1)
        #expect(ours.filter { $0 == .linkDown(interface: veth.outside, index: index) }.count == 1)
    }

    @Test func anSSDPSearchRestartsOnTheInterfaceThatCameUp() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") else {
            print("skipping: the multicast listener in the namespace needs /usr/bin/python3")
            return
        }
        let veth = try VethNamespace()
        // A listener inside the namespace: joins the SSDP group on its veth and prints what arrives.
        let listener = try LineCollector(["/usr/sbin/ip", "netns", "exec", veth.namespace, "/usr/bin/python3", "-u", "-c", """
            import socket, struct, sys
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("", 1900))
            s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton("239.255.255.250") + socket.inet_aton("198.51.100.2"))
            print("ready", flush=True)
            while True:
                data, source = s.recvfrom(4096)
                print(source[0] + " " + data.decode(errors="replace").replace("\\r\\n", "|"), flush=True)
            """], environment: [:])
        defer { listener.stop() }
        #expect(await eventually { listener.lines.value.contains { $0.1 == "ready" } })

        let monitor = try NetworkChangeMonitor()
        defer { monitor.stop() }
        let searcher = SSDPSearcher()
        let restarter = DiscoveryRestarter(changes: monitor.changes, searcher: searcher)
        defer { restarter.stop() }
        try VethNamespace.ip(["addr", "add", "198.51.100.1/24", "dev", veth.outside])
        try VethNamespace.ip(["link", "set", veth.outside, "up"])
        #expect(await eventually { searcher.history.contains { $0.interface == veth.outside } })
        #expect(await eventually { listener.lines.value.contains { $0.1.hasPrefix("198.51.100.1 M-SEARCH * HTTP/1.1|") } })
        let request = try #require(listener.lines.value.first { $0.1.hasPrefix("198.51.100.1 M-SEARCH") }?.1)
        #expect(request.contains("|HOST: 239.255.255.250:1900|"))
        #expect(request.contains("|MAN: \"ssdp:discover\"|"))
        #expect(request.contains("|MX: 1|"))
        #expect(request.contains("|ST: urn:schemas-upnp-org:device:MediaRenderer:1|"))
    }
}
