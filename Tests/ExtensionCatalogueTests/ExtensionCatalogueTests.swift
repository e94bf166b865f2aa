import BoxConfiguration
@testable import ExtensionCatalogue
import LiveStreaming
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

    /// `[audio] live-prime` reaches the live streams' settings by name or model, over the
    /// extension's own (gmediarender's 0), and a device's latency is at least its prime.
    @Test func livePrimesReachTheStreamsAndBoundTheLatency() throws {
        let configuration = try DaemonConfiguration.parse("[audio]\nlive-prime = Den TV: 1500, gmediarender: 300\nlive-latency = Den TV: 1000", file: "box.conf")
        let defaults = LiveStreamSettings(primes: ["gmediarender": .zero], latencies: ["gmediarender": .milliseconds(20)])
        let settings = ExtensionCatalogue.liveSettings(defaults, from: configuration)
        #expect(settings.prime(name: "Den TV") == .milliseconds(1500))
        #expect(settings.streamConfiguration(name: "Attic", model: "gmediarender").prime == .milliseconds(300))
        #expect(settings.streamConfiguration(name: "Hall").prime == .milliseconds(500), "the default")
        #expect(settings.latency(name: "Den TV") == .milliseconds(1500), "held before it plays: more than the 1 000 ms configured")
        #expect(settings.latency(name: "Attic", model: "gmediarender") == .milliseconds(300))
        #expect(settings.latency(name: "Hall") == .milliseconds(1000))
        #expect(ExtensionCatalogue.liveSettings(defaults, from: DaemonConfiguration()).latency(name: "Attic", model: "gmediarender") == .milliseconds(20))
    }
}
