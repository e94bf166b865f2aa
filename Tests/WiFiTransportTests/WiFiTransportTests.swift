import MediaClock
import MediaRouteTestSupport
import Testing
import Transport
@testable import WiFiTransport

@Suite(.timeLimit(.minutes(1)))
struct WiFiTransportTests {
    @Test func withoutNL80211TheTransportSaysWhyAndStops() async throws {
        guard case .failure(let reason) = NL80211Family.resolve() else {
            print("skipping: this kernel has nl80211; the unavailable path is not reachable here")
            return
        }
        #expect(reason.reason.contains("nl80211"))
        let transport = WiFiTransport(configuration: .init(interfaceIndexes: [1]))
        #expect(await transport.unavailableReason == reason.reason)
        var events: [DiscoveryEvent] = []
        for await event in transport.discover() { events.append(event) }
        #expect(events == [.failed(TransportError(.unavailable, reason.reason))])
        await #expect(throws: TransportError.self) {
            _ = try await transport.connect(to: Endpoint(id: "wfd:x", transport: "wifi", address: .wifi(bssid: "02:00:00:00:00:01", interfaceIndex: 1)))
        }
    }

    @Test func scansBackOffFindDevicesAndAgeThemOut() async throws {
        let clock = ManualHostClock()
        let tv = try scanResult(Bytes.scanMessage(bssid: Bytes.tvBSSID, frequency: 2437, signal: -4500, elements: Bytes.tvElements))
        let setup = try scanResult(Bytes.scanMessage(bssid: [2, 0, 0, 0, 0, 2], frequency: 2412, signal: -6000, elements: Bytes.ssid("Sonos_Setup_9")))
        var closer = tv
        closer.signalMBm = -3000
        // Scan 1: the TV. Scan 2: TV closer + setup AP. Then nothing (both age out).
        let scanner = ScriptedScanner([[tv], [closer, setup]])
        let configuration = WiFiTransport.Configuration(
            interfaceIndexes: [3], p2p: true, setupSSIDPatterns: ["Sonos_Setup_*"], initialInterval: .seconds(5),
            maximumInterval: .seconds(40), resultLifetime: .seconds(60))
        let transport = WiFiTransport(configuration: configuration, scanner: scanner, clock: clock)
        let recorded = Locked<[DiscoveryEvent]>([])
        let consumer = Task { for await event in transport.discover() { recorded.withLock { $0.append(event) } } }
        defer { consumer.cancel() }
        await run(clock, until: .seconds(200))
        // The last wake-up (165 s) may still be scanning when the clock stops.
        await eventually { await scanner.scans.count >= 9 && recorded.value.count >= 5 }
        let events = recorded.value
        #expect(events.count == 5, "\(events)")
        guard events.count == 5 else { return }
        guard case .appeared(let first) = events[0], case .updated(let updated) = events[1], case .appeared(let second) = events[2] else {
            Issue.record("unexpected order: \(events)")
            return
        }
        #expect(first.name == "Living Room TV")
        #expect(first.address == .wifi(bssid: "02:aa:bb:cc:dd:01", interfaceIndex: 3))
        #expect(updated.signalStrength == -30)
        #expect(second.attributes["state"] == "needsSetup")
        let lost = events[3...].compactMap { event -> String? in
            if case .lost(let id) = event { return id }
            return nil
        }
        #expect(Set(lost) == [first.id, second.id])
        // Every scan is a P2P scan on interface 3; pauses 5 s after news, then 10, 20, 40, 40, …
        let scans = await scanner.scans
        #expect(scans.allSatisfy { $0.index == 3 && $0.p2p })
        // 0, 5 (news), 10 (news → 5), 15, 25, 45, 85, 125, 165 ≤ 200.
        #expect(scans.count == 9, "\(scans.count) scans")
    }
}
