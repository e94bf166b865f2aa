import RoutingModel
import Testing

@Suite struct SystemDeviceTests {
    static func device(_ id: String, _ name: String) throws -> SystemDevice {
        let member = try #require(OutputDeviceDescription(id: id, displayName: name, capabilities: [.urlPlayback]))
        return SystemDevice(id: "upnp/\(id)", displayName: name, members: [
            .init(protocolType: MediaSharingProtocol("upnp", displayName: "UPnP"), device: member, state: .idle),
        ])
    }

    @Test func aPersonsWordsMatchByIdThenByNameIgnoringCaseAndSpacing() throws {
        let list = [try Self.device("1", "Living Room TV"), try Self.device("2", "Kitchen"), try Self.device("3", "upnp/1")]
        #expect(list.named("upnp/1")?.id == "upnp/1")  // an id wins over a name that looks like it
        #expect(list.named("living   room tv")?.id == "upnp/1")
        #expect(list.named(" KITCHEN ")?.id == "upnp/2")
        #expect(list.named("Kitch") == nil)
        #expect(SystemDevice.comparableName("  A\tB  ") == "a b")
    }

    @Test func aMergedDeviceSumsItsMembers() throws {
        let tv = try #require(OutputDeviceDescription(id: "a", displayName: "TV", capabilities: [.urlPlayback], unavailableReason: "asleep"))
        let speaker = try #require(OutputDeviceDescription(id: "b", displayName: "TV", capabilities: [.realtimeAudioStreaming]))
        let merged = SystemDevice(id: "x", displayName: "TV", members: [
            .init(protocolType: MediaSharingProtocol("upnp", displayName: "UPnP"), device: tv, state: .idle),
            .init(protocolType: MediaSharingProtocol("ble", displayName: "BLE"), device: speaker, state: .active),
        ])
        #expect(merged.capabilities == [.urlPlayback, .realtimeAudioStreaming])
        #expect(merged.isAvailable)
        #expect(merged.state == .active)
    }
}
