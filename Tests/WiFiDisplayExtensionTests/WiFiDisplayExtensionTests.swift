import LoopbackExtension
import LoopbackTransport
import MediaClock
import MediaDevice
import RoutingModel
import MediaRouteTestSupport
import RouteSystem
import Testing
import Transport
import WiFiDisplayExtension
@testable import WiFiTransport

@Suite(.timeLimit(.minutes(1)))
struct WiFiDisplayExtensionTests {
    @Test func sinksAndSetupDevicesAreListedAndActivationFailsClearly() async throws {
        let tv = try scanResult(Bytes.scanMessage(bssid: Bytes.tvBSSID, frequency: 2437, signal: -4500, elements: Bytes.tvElements))
        let setup = try scanResult(Bytes.scanMessage(bssid: [2, 0, 0, 0, 0, 2], frequency: 2412, signal: -6000, elements: Bytes.ssid("Sonos_Setup_9")))
        let transport = WiFiTransport(
            configuration: .init(interfaceIndexes: [3], setupSSIDPatterns: ["Sonos_Setup_*"]), scanner: ScriptedScanner([[tv, setup]]))
        let system = RouteSystem()
        try await system.load { manager in WiFiDisplayExtension(transport: transport, routingManager: manager) }
        await system.beginDiscovery(client: "test")
        #expect(await eventually { await system.devicesList.count == 2 })
        let devices = await system.devicesList
        let sink = try #require(devices.first { $0.displayName == "Living Room TV" })
        #expect(sink.deviceType == .tv)
        #expect(sink.capabilities == [.realtimeVideoStreaming])
        let needsSetup = try #require(devices.first { $0.displayName == "Sonos_Setup_9 (needs setup)" })
        #expect(needsSetup.capabilities.isEmpty)
        // Listed as unavailable with the reason, never offered as a route.
        #expect(!sink.isAvailable && sink.unavailableReason?.contains("Miracast") == true)
        #expect(!needsSetup.isAvailable && needsSetup.unavailableReason?.contains("setup mode") == true)
        do {
            _ = try await system.activate(deviceID: sink.id)
            Issue.record("Miracast activated")
        } catch let error as MediaDeviceError {
            #expect(error.code == .unsupported)
            #expect(error.message.contains("Miracast"))
        }
        do {
            _ = try await system.activate(deviceID: needsSetup.id)
            Issue.record("a setup-mode device activated")
        } catch let error as MediaDeviceError {
            #expect(error.code == .unsupported)
            #expect(error.message.contains("is unavailable: in setup mode"))
        }
        await system.shutdown()
    }

    @Test func withoutNL80211TheRestOfTheSystemRunsOn() async throws {
        guard case .failure = NL80211Family.resolve() else {
            print("skipping: this kernel has nl80211")
            return
        }
        let rig = try await LoopbackRig()
        let wifi = WiFiTransport(configuration: .init(interfaceIndexes: [1]))
        try await rig.system.load { manager in WiFiDisplayExtension(transport: wifi, routingManager: manager) }
        let devices = await rig.discover(expecting: 2)
        #expect(devices.map(\.displayName).sorted() == ["Kitchen Speaker", "Living Room TV"])
        let failure = await rig.recorder.first { event -> String? in
            if case .discoveryFailed(let protocolType, let error) = event, protocolType == WiFiDisplayExtension.defaultProtocol { return error.message }
            return nil
        }
        #expect(failure?.contains("nl80211") == true, "\(String(describing: failure))")
    }
}
