import MediaDevice
@testable import RouteSystem
import Testing
import Transport
import RoutingModel

/// One physical device, one entry, a stable id (issue "a real box shows real devices").
@Suite struct DeviceDirectoryTests {
    static let upnp = "org.mediaroute.upnp"
    static let cast = "org.mediaroute.cast"
    static let ble = "org.mediaroute.bluetooth-le"
    static let loopback = "org.mediaroute.loopback"

    static func device(
        _ id: String, _ name: String, type: MediaOutputDevice.DeviceType = .tv, address: Endpoint.Address,
        transport: String = "lan", attributes: [String: String] = [:], identifiers: [DeviceIdentifier] = []
    ) -> MediaOutputDevice {
        let endpoint = Endpoint(id: id, transport: transport, address: address, attributes: attributes, identifiers: identifiers)
        return MediaOutputDevice(id: id, displayName: name, capabilities: [.urlPlayback], deviceType: type, requiredNetworkEndpoints: [endpoint])!
    }

    static func ip(_ host: String) -> Endpoint.Address { .ip(host: host, port: 8009, interface: "eth0") }

    @Test func membersWithASharedIdentifierOnOneHostAreOneEntryWhateverTheirNames() {
        var directory = DeviceDirectory()
        let tv = Self.device("uuid:AAA", "Samsung Q60", address: Self.ip("192.0.2.5"), attributes: ["mac": "AA-BB-CC-00-11-22"])
        let cast = Self.device("cast-1", "Living Room", address: Self.ip("192.0.2.9"), attributes: ["mac": "aa:bb:cc:00:11:22"])
        #expect(directory.upsert(tv, key: DeviceKey(protocolID: Self.upnp, deviceID: tv.id)) == [.found("\(Self.upnp)/uuid:AAA")])
        // Another IP claiming the same MAC: any host can announce another's MAC, so a claim from
        // another address never joins the TV's entry (the person sees two entries, not an
        // impostor hidden inside the TV they know).
        #expect(directory.upsert(cast, key: DeviceKey(protocolID: Self.cast, deviceID: cast.id)) == [.found("\(Self.cast)/cast-1")])
        #expect(directory.orderedEntries.map(\.keys.count) == [1, 1])
        // The same MAC and the same IP: one entry, whatever the names.
        let sameHost = Self.device("cast-2", "Living Room", address: Self.ip("192.0.2.5"), attributes: ["deviceid": "AA:BB:CC:00:11:22"])
        var second = DeviceDirectory()
        _ = second.upsert(tv, key: DeviceKey(protocolID: Self.upnp, deviceID: tv.id))
        #expect(second.upsert(sameHost, key: DeviceKey(protocolID: Self.cast, deviceID: sameHost.id)) == [.updated("\(Self.upnp)/uuid:AAA")])
        #expect(second.orderedEntries.map(\.keys.count) == [2])
    }

    @Test func twoDevicesOfOneNameButDifferentIdentitiesStayTwo() {
        var directory = DeviceDirectory()
        let first = Self.device("uuid:1", "TV", address: Self.ip("192.0.2.5"))
        let second = Self.device("cast-9", "TV", address: Self.ip("192.0.2.6"))
        _ = directory.upsert(first, key: DeviceKey(protocolID: Self.upnp, deviceID: first.id))
        #expect(directory.upsert(second, key: DeviceKey(protocolID: Self.cast, deviceID: second.id)) == [.found("\(Self.cast)/cast-9")])
        #expect(directory.orderedEntries.count == 2)
    }

    @Test func aNameMergesOnlyAsALastResortForTheSameTypeAndNoConflict() {
        var directory = DeviceDirectory()
        let speaker = Self.device("AA:BB:CC:DD:EE:01", "Kitchen Speaker", type: .speaker,
                                  address: .bluetooth(address: "AA:BB:CC:DD:EE:01", adapter: "hci0"), transport: "bluez")
        let renderer = Self.device("uuid:k", "kitchen  speaker", type: .speaker, address: Self.ip("192.0.2.7"))
        let tvOfSameName = Self.device("uuid:t", "Kitchen Speaker", type: .tv, address: Self.ip("192.0.2.8"))
        _ = directory.upsert(speaker, key: DeviceKey(protocolID: Self.ble, deviceID: speaker.id))
        // No identifier kind in common, same type, same name: merged.
        #expect(directory.upsert(renderer, key: DeviceKey(protocolID: Self.upnp, deviceID: renderer.id)).contains(.updated("\(Self.ble)/AA:BB:CC:DD:EE:01")))
        // Another type: not merged, even by name.
        _ = directory.upsert(tvOfSameName, key: DeviceKey(protocolID: Self.cast, deviceID: tvOfSameName.id))
        #expect(directory.orderedEntries.map(\.keys.count) == [2, 1])
    }

    @Test func aSimulatedDeviceNeverMergesWithARealOne() {
        var directory = DeviceDirectory()
        let simulated = Self.device("speaker", "Kitchen Speaker", type: .speaker, address: .loopback(name: "speaker"), transport: "loopback")
        let real = Self.device("AA:BB:CC:DD:EE:02", "Kitchen Speaker", type: .speaker,
                               address: .bluetooth(address: "AA:BB:CC:DD:EE:02", adapter: "hci0"), transport: "bluez")
        _ = directory.upsert(simulated, key: DeviceKey(protocolID: Self.loopback, deviceID: simulated.id))
        _ = directory.upsert(real, key: DeviceKey(protocolID: Self.ble, deviceID: real.id))
        #expect(directory.orderedEntries.count == 2)
    }

    @Test func twoMembersOfOneProtocolAreTwoDevicesEvenOnOneHost() {
        var directory = DeviceDirectory()
        let gmediarender = Self.device("uuid:g", "Renderer", address: Self.ip("192.0.2.5"))
        let rygel = Self.device("uuid:r", "Renderer", address: Self.ip("192.0.2.5"))
        _ = directory.upsert(gmediarender, key: DeviceKey(protocolID: Self.upnp, deviceID: gmediarender.id))
        _ = directory.upsert(rygel, key: DeviceKey(protocolID: Self.upnp, deviceID: rygel.id))
        #expect(directory.orderedEntries.count == 2)
    }

    @Test func theIdStaysWhileAnyMemberRemains() {
        var directory = DeviceDirectory()
        let tv = Self.device("uuid:A", "Den TV", address: Self.ip("192.0.2.5"))
        let cast = Self.device("c-1", "Den TV", address: Self.ip("192.0.2.5"))
        let upnpKey = DeviceKey(protocolID: Self.upnp, deviceID: tv.id)
        let castKey = DeviceKey(protocolID: Self.cast, deviceID: cast.id)
        _ = directory.upsert(tv, key: upnpKey)
        _ = directory.upsert(cast, key: castKey)
        // The member that created the entry goes: same id, one member.
        #expect(directory.remove(upnpKey) == [.updated("\(Self.upnp)/uuid:A")])
        #expect(directory.orderedEntries.map(\.id) == ["\(Self.upnp)/uuid:A"])
        // It comes back: it joins the entry it left, which kept its id.
        #expect(directory.upsert(tv, key: upnpKey) == [.updated("\(Self.upnp)/uuid:A")])
        _ = directory.remove(upnpKey)
        #expect(directory.remove(castKey) == [.lost("\(Self.upnp)/uuid:A")])
        #expect(directory.orderedEntries.isEmpty)
        #expect(directory.devices.isEmpty)
    }

    @Test func anIdentifierLearnedLaterJoinsTwoEntriesAndTheOlderIdSurvives() {
        var directory = DeviceDirectory()
        let renderer = Self.device("uuid:A", "Samsung", address: Self.ip("192.0.2.5"), attributes: ["mac": "02:00:00:00:00:01"])
        var cast = Self.device("c-1", "Lounge", address: .ip(host: "fe80::1", port: 8009, interface: "eth0"))
        let upnpKey = DeviceKey(protocolID: Self.upnp, deviceID: renderer.id)
        let castKey = DeviceKey(protocolID: Self.cast, deviceID: cast.id)
        _ = directory.upsert(renderer, key: upnpKey)
        _ = directory.upsert(cast, key: castKey)
        #expect(directory.orderedEntries.count == 2)
        // The Cast device's MAC becomes known (and its IPv4 address): it is the same TV.
        cast.requiredNetworkEndpoints[0].identifiers = [.mac("02:00:00:00:00:01"), .ipAddress("192.0.2.5")]
        let changes = directory.upsert(cast, key: castKey)
        #expect(changes == [.lost("\(Self.cast)/c-1"), .updated("\(Self.upnp)/uuid:A")])
        #expect(directory.orderedEntries.map(\.id) == ["\(Self.upnp)/uuid:A"])
        #expect(directory.entry(containing: castKey)?.id == "\(Self.upnp)/uuid:A")
    }

    @Test func addressesAreNormalised() {
        #expect(DeviceIdentifier.normalizedAddress("AA-BB-CC-DD-EE-FF") == "aa:bb:cc:dd:ee:ff")
        #expect(DeviceIdentifier.normalizedAddress("aabbccddeeff") == "aa:bb:cc:dd:ee:ff")
        #expect(DeviceIdentifier.normalizedAddress("not a mac") == nil)
        #expect(DeviceIdentifier.normalizedAddress("AA:BB:CC:DD:EE") == nil)
    }
}
