import Foundation
import Testing
import Transport

@Suite struct EndpointTests {
    @Test(arguments: [
        Endpoint.Address.loopback(name: "tv"),
        .ip(host: "192.0.2.10", port: 49494, interface: "eth0"),
        .bluetooth(address: "AA:BB:CC:DD:EE:FF", adapter: "hci0"),
        .wifi(bssid: "02:00:00:00:01:00", interfaceIndex: 3),
    ])
    func everyAddressKindSurvivesJSON(address: Endpoint.Address) throws {
        let endpoint = Endpoint(
            id: "x", transport: "t", address: address, signalStrength: -50,
            attributes: ["model": "M"], services: ["urn:x"])
        let decoded = try JSONDecoder().decode(Endpoint.self, from: JSONEncoder().encode(endpoint))
        #expect(decoded == endpoint)
    }

    @Test func transportErrorsDescribeThemselves() {
        let error = TransportError(.connectionRefused, "tv refused")
        #expect(error.description == "connectionRefused: tv refused")
        #expect(error != TransportError(.connectionLost, "tv refused"))
    }
}
