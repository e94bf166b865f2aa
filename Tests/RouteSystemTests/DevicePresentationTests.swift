import MediaDevice
import RoutingModel
import Testing
import Transport

@testable import RouteSystem

/// ``DevicePresentation`` and ``DiscoveryClients`` on values.
@Suite struct DevicePresentationTests {
    static let upnp = MediaSharingProtocol("org.mediaroute.upnp", displayName: "UPnP/DLNA")
    static let cast = MediaSharingProtocol("org.mediaroute.cast", displayName: "Google Cast")
    static let protocols = [
        upnp.identifier: DevicePresentation.LoadedProtocol(protocolType: upnp, order: 0),
        cast.identifier: DevicePresentation.LoadedProtocol(protocolType: cast, order: 1),
    ]

    static func add(_ directory: inout DeviceDirectory, _ id: String, _ name: String, host: String, through protocolType: MediaSharingProtocol) -> DeviceKey {
        let device = DeviceDirectoryTests.device(id, name, address: DeviceDirectoryTests.ip(host))
        let key = DeviceKey(protocolID: protocolType.identifier, deviceID: id)
        _ = directory.upsert(device, key: key)
        return key
    }

    @Test func sharedNamesGetTheirProtocolsOrElseAnAddress() {
        var directory = DeviceDirectory()
        _ = Self.add(&directory, "uuid:1", "TV", host: "192.0.2.5", through: Self.upnp)
        _ = Self.add(&directory, "cast-1", "TV", host: "192.0.2.6", through: Self.cast)
        let byProtocol = DevicePresentation(directory: directory, protocols: Self.protocols, states: [:])
        #expect(byProtocol.list.map(\.displayName) == ["TV (UPnP/DLNA)", "TV (Google Cast)"])
        _ = Self.add(&directory, "uuid:2", "TV", host: "192.0.2.7", through: Self.upnp)
        let byAddress = DevicePresentation(directory: directory, protocols: Self.protocols, states: [:])
        #expect(byAddress.list.map(\.displayName) == ["TV (UPnP/DLNA, 192.0.2.5)", "TV (Google Cast)", "TV (UPnP/DLNA, 192.0.2.7)"])
        // One entry built alone reads as it does in the list.
        let last = try! #require(directory.orderedEntries.last)
        #expect(byAddress.presented(last)?.displayName == "TV (UPnP/DLNA, 192.0.2.7)")
    }

    @Test func membersComeInLoadOrderWithTheirStatesAndUnknownProtocolsAreLeftOut() throws {
        var directory = DeviceDirectory()
        let castKey = Self.add(&directory, "cast-1", "Den TV", host: "192.0.2.5", through: Self.cast)
        _ = Self.add(&directory, "uuid:1", "Den TV", host: "192.0.2.5", through: Self.upnp)
        var entry = try #require(directory.orderedEntries.first)
        let presentation = DevicePresentation(directory: directory, protocols: Self.protocols, states: [castKey: .active])
        // The same host and name: one entry (the directory's rule), UPnP first by load order.
        let device = try #require(presentation.device(for: entry))
        #expect(device.members.map(\.protocolType) == [Self.upnp, Self.cast] && device.members.map(\.state) == [.idle, .active])
        #expect(device.displayName == "Den TV" && device.state == .active)
        entry = try #require(directory.orderedEntries.first)
        let castOnly = DevicePresentation(directory: directory, protocols: [Self.cast.identifier: Self.protocols[Self.cast.identifier]!], states: [:])
        #expect(castOnly.device(for: entry)?.members.map(\.protocolType) == [Self.cast], "a member of an unloaded protocol is not shown")
    }

    @Test func discoveryRunsWhileAnyClientWantsItAndStopsWithTheLast() {
        var clients = DiscoveryClients()
        #expect(clients.begin("picker") == true, "the first request starts it")
        #expect(clients.begin("picker") == false && clients.begin("app") == false)
        #expect(clients.end("picker") == false && clients.end("picker") == false, "asked twice, done twice")
        #expect(clients.end("nobody") == false)
        #expect(clients.endAll("app") == true, "the last client gone stops it")
        #expect(clients.isEmpty && clients.removeAll() == false)
        _ = clients.begin("x")
        #expect(clients.removeAll() == true)
    }
}
