import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
import Transport

@Suite struct EndpointTests {
    @Test(arguments: [
        Endpoint.Address.loopback(name: "tv"),
        .ip(host: "192.0.2.10", port: 49494, interface: "eth0"),
        .bluetooth(address: "AA:BB:CC:DD:EE:FF", adapter: "hci0"),
        .bluetooth(address: "AA:BB:CC:DD:EE:FF", adapter: "hci0", object: "/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF"),
        .wifi(bssid: "02:00:00:00:01:00", interfaceIndex: 3),
    ])
    func everyAddressKindSurvivesJSON(address: Endpoint.Address) throws {
        let endpoint = Endpoint(
            id: "x", transport: "t", address: address, name: "Kitchen", signalStrength: -50,
            attributes: ["model": "M"], services: ["urn:x"],
            facts: EndpointFacts(interfaceAddress: "192.0.2.1", descriptionLocation: "http://192.0.2.10:49494/d.xml", kind: .tv, bluetoothMajorClass: .audioVideo))
        let decoded = try JSONDecoder().decode(Endpoint.self, from: JSONEncoder().encode(endpoint))
        #expect(decoded == endpoint)
    }

    /// What a device says of itself cannot pose as what the transport learned: a TXT record or
    /// description field named like a fact stays an attribute.
    @Test func attributesNamedLikeFactsAreNotFacts() {
        let endpoint = Endpoint(
            id: "x", transport: "lan", address: .ip(host: "192.0.2.10", port: 80, interface: "eth0"),
            attributes: ["interfaceAddress": "203.0.113.9", "location": "http://203.0.113.9/d.xml", "kind": "tv"])
        #expect(endpoint.facts == EndpointFacts())
    }

    @Test func gattErrorsCarryTheirATTCode() {
        #expect(GATTError(attErrorCode: 0x80, "stale").description == "ATT error 0x80: stale")
        #expect(GATTError("gone").description == "gone")
    }

    @Test func aPacketSocketSendsWholePacketsAndClosesWhatItOwns() throws {
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &pair) == 0)
        var socket: PacketSocket? = PacketSocket(owning: pair[0], mtu: 4)
        #expect(socket?.send([1, 2, 3]) == .sent)
        var buffer = [UInt8](repeating: 0, count: 8)
        #expect(read(pair[1], &buffer, 8) == 3)
        #expect(Array(buffer.prefix(3)) == [1, 2, 3])
        // A full socket drops the packet; a closed one says so, and stays closed.
        var sent = 0
        while socket?.send([UInt8](repeating: 7, count: 4)) == .sent { sent += 1 }
        #expect(sent > 0 && socket?.send([1]) == .dropped, "full after \(sent) packets")
        close(pair[1])
        let outcome = socket?.send([1])
        #expect(outcome == .closed(errno: ECONNRESET) || outcome == .closed(errno: EPIPE), "\(String(describing: outcome))")
        #expect(socket?.send([1]) == .closed(errno: EPIPE), "and stays closed")
        socket = nil
        #expect(fcntl(pair[0], F_GETFD) == -1, "the socket's descriptor is closed with it")
    }

    @Test func transportErrorsDescribeThemselves() {
        let error = TransportError(.connectionRefused, "tv refused")
        #expect(error.description == "connectionRefused: tv refused")
        #expect(error != TransportError(.connectionLost, "tv refused"))
    }
}
