import AdapterInventory
import BoxConfiguration
import Foundation
import MediaRouteTestSupport
import Testing
import MediaRouteTesting

@Suite(.timeLimit(.minutes(1)), .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip")))
struct AdapterInventoryTests {
    @Test func vethPairsAreReportedAddedThenRemoved() async throws {
        var configuration = DaemonConfiguration()
        configuration.lan.role = .secondary
        let inventory = AdapterInventory(configuration: configuration)
        let events = await inventory.events()
        await inventory.start()
        defer { Task { await inventory.stop() } }
        #expect(await !inventory.adapters.map(\.name).contains("lo"))

        let suffix = String(UUID().uuidString.prefix(4)).lowercased()
        let (status, output) = try await ChildProcess.runOffPool(["/usr/sbin/ip", "link", "add", "mri\(suffix)a", "type", "veth", "peer", "name", "mri\(suffix)b"])
        try #require(status == 0, "\(output)")
        var added: [AdapterSettings] = []
        var iterator = events.makeAsyncIterator()
        while added.count < 2, let event = await iterator.next() {
            if case .added(let settings) = event, settings.name.hasPrefix("mri\(suffix)") { added.append(settings) }
        }
        #expect(Set(added.map(\.name)) == ["mri\(suffix)a", "mri\(suffix)b"])
        #expect(added.allSatisfy { $0.transport == .lan && $0.enabled && $0.role == .secondary && $0.subsystem == "net" })

        _ = try await ChildProcess.runOffPool(["/usr/sbin/ip", "link", "del", "mri\(suffix)a"])
        var removed: Set<String> = []
        while removed.count < 2, let event = await iterator.next() {
            if case .removed(let settings) = event, settings.name.hasPrefix("mri\(suffix)") { removed.insert(settings.name) }
        }
        #expect(removed == ["mri\(suffix)a", "mri\(suffix)b"])
        // (Other tests plug veths of their own in parallel: look only at ours.)
        #expect(await !inventory.adapters.contains { $0.name.hasPrefix("mri\(suffix)") })
    }
}
