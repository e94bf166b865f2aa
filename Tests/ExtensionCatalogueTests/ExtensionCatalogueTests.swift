import BoxConfiguration
import ExtensionCatalogue
import Logging
import RouteSystem
import Synchronization
import Testing

@Suite struct ExtensionCatalogueTests {
    static let logger = Logger(label: "test.catalogue")
    static let noBus = "unix:path=/nonexistent/mediaroute-catalogue-test"

    func load(_ entries: Set<CatalogueEntry>, _ catalogue: ExtensionCatalogue) async throws -> (protocols: [String], notices: [String]) {
        let system = RouteSystem(logger: Self.logger)
        let notices = Mutex<[String]>([])
        let loaded = try await catalogue.load(entries, into: system) { entry, reason in
            notices.withLock { $0.append("\(entry.noticeName): \(reason)") }
        }
        let protocols = await system.loadedProtocols.map(\.identifier)
        await system.shutdown()
        await loaded.close()
        return (protocols, notices.withLock { $0 })
    }

    @Test func theCLILeavesOutWhatCannotOpenWithOneNoticeEach() async throws {
        let catalogue = ExtensionCatalogue(adapterRecords: { [] }, bluezBus: .address(Self.noBus), logger: Self.logger)
        let (protocols, notices) = try await load([.bluez, .wifi], catalogue)
        #expect(protocols.isEmpty)
        #expect(notices.count == 2, "\(notices)")
        #expect(notices.filter { $0.hasPrefix("Bluetooth: ") }.count == 1)
        #expect(notices.filter { $0.hasPrefix("Wi-Fi: ") }.count == 1)
    }

    @Test func theDaemonLoadsWiFiEvenWithoutAnInterfaceSoItsFailureIsPublished() async throws {
        let catalogue = ExtensionCatalogue(adapterRecords: { [] }, bluezBus: .address(Self.noBus), loadsUnavailable: true, logger: Self.logger)
        let (protocols, notices) = try await load([.wifi, .bluez], catalogue)
        #expect(protocols == ["org.mediaroute.wifi-display"])
        // No bus at all is still a notice: there is nothing to follow BlueZ on.
        #expect(notices.count == 1 && notices[0].hasPrefix("Bluetooth: "), "\(notices)")
    }

    @Test func entriesLoadInCatalogueOrderWhateverTheSetSays() async throws {
        let catalogue = ExtensionCatalogue(adapterRecords: { [] }, loadsUnavailable: true, logger: Self.logger)
        let (protocols, _) = try await load([.wifi, .lan], catalogue)
        #expect(protocols == ["org.mediaroute.upnp", "org.mediaroute.raop", "org.mediaroute.cast", "org.mediaroute.wifi-display"], "the LAN's three (UPnP, AirPlay, Cast), then Wi-Fi")
    }

    @Test func theConfigurationTurnsEntriesOnAndOff() {
        var configuration = DaemonConfiguration()
        #expect(CatalogueEntry.allCases.allSatisfy { $0.isEnabled(in: configuration) })
        configuration.bluetooth.enabled = false
        #expect(!CatalogueEntry.bluez.isEnabled(in: configuration))
        #expect(CatalogueEntry.lan.isEnabled(in: configuration))
    }
}
