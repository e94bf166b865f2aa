import IPNetwork
import Testing

@Suite struct HTTPURLTests {
    @Test func resolvesReferencesTheWayDescriptionsUseThem() {
        let base = HTTPURL("http://198.51.100.2:49494/dev/description.xml")!
        #expect(base.resolve("scpd.xml")?.path == "/dev/scpd.xml")
        #expect(base.resolve("/x")?.description == "http://198.51.100.2:49494/x")
        #expect(base.resolve("http://198.51.100.3/y")?.host == "198.51.100.3")
        #expect(base.resolve("//evil/x") == nil)
        #expect(base.resolve("ftp://x/y") == nil)
        #expect(HTTPURL("http://user:pw@h/x") == nil)
        #expect(HTTPURL("https://h/x") == nil)
        #expect(HTTPURL("http://h:0/x") == nil)
        #expect(HTTPURL("http://h:99999/x") == nil)
        #expect(HTTPURL("http://[::1]:8080/x")?.authority == "[::1]:8080")
    }

    @Test func parsesHostPortAndPathAndKeepsThemBounded() {
        let url = HTTPURL("HTTP://Renderer.local:8080/desc.xml?x=1")
        #expect(url?.host == "renderer.local")
        #expect(url?.port == 8080)
        #expect(url?.path == "/desc.xml?x=1")
        #expect(HTTPURL("http://h")?.path == "/")
        #expect(HTTPURL("http://h")?.port == 80)
        #expect(HTTPURL("http://h/" + String(repeating: "a", count: 4096)) == nil)
    }
}

@Suite struct NetworkChangeTests {
    @Test func everyChangeNamesItsInterface() {
        let changes: [NetworkChange] = [
            .linkUp(interface: "eth0", index: 2), .linkDown(interface: "eth0", index: 2),
            .addressAdded(interface: "eth0", index: 2, address: "192.0.2.1"),
            .addressRemoved(interface: "eth0", index: 2, address: "192.0.2.1"),
            .wifiConnected(index: 2), .wifiDisconnected(index: 2), .wifiRoamed(index: 2),
        ]
        #expect(changes.allSatisfy { $0.interfaceIndex == 2 })
    }
}
