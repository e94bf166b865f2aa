import Foundation
import LoopbackExtension
import LoopbackTransport
import MediaClock
import MediaDevice
import RoutingModel
import MediaRouteTestSupport
import Testing
import Transport

/// Captures what an extension reports, standing in for the system.
final class ReportLog: Sendable {
    let events = Locked<[MediaDeviceRoutingEvent]>([])
    var manager: MediaDeviceRoutingManager {
        let events = self.events
        return MediaDeviceRoutingManager { event in events.withLock { $0.append(event) } }
    }

    func first<T>(_ extract: @escaping @Sendable (MediaDeviceRoutingEvent) -> T?) async -> T? {
        await eventually { self.events.value.contains { extract($0) != nil } }
        return events.value.lazy.compactMap(extract).first
    }
}

@Suite(.timeLimit(.minutes(1))) struct LoopbackExtensionTests {
    let clock = ManualHostClock()

    func make(_ devices: [LoopbackDeviceSpec], requestTimeout: Duration = .seconds(5)) -> (LoopbackTransport, LoopbackExtension, ReportLog) {
        let transport = LoopbackTransport(scenario: LoopbackScenario(devices: devices), clock: clock)
        let log = ReportLog()
        let ext = LoopbackExtension(
            transport: transport, routingManager: log.manager, clock: clock, requestTimeout: requestTimeout)
        return (transport, ext, log)
    }

    @Test func endpointsBecomeDevicesWithTheirKindsCapabilities() async throws {
        let (_, ext, log) = make([LoopbackRig.tv, LoopbackRig.speaker])
        await ext.startDeviceDiscovery()
        #expect(await eventually { log.events.value.count == 2 })
        let devices = log.events.value.compactMap { event -> MediaOutputDevice? in
            if case .foundDevice(let device) = event { return device }
            return nil
        }
        let tv = try #require(devices.first { $0.id == "tv" })
        #expect(tv.capabilities == [.urlPlayback, .realtimeVideoStreaming])
        #expect(tv.deviceType == .tv)
        #expect(tv.volumeControl == .absolute)
        #expect(tv.canMute)
        #expect(tv.requiredNetworkEndpoints.first?.address == .loopback(name: "tv"))
        let speaker = try #require(devices.first { $0.id == "speaker" })
        #expect(speaker.capabilities == [.realtimeAudioStreaming])
        #expect(speaker.volumeControl == .relative)
        #expect(!speaker.canMute)
        await ext.stopDeviceDiscovery()
    }

    @Test func aDeviceWithoutAPinActivatesAtOnceAndOneWithAPinAsksForIt() async throws {
        let (transport, ext, log) = make([LoopbackRig.tv, LoopbackRig.speaker])
        let speaker = try #require(LoopbackExtension.testDevice(await transport.endpoint(named: "speaker")))
        let tv = try #require(LoopbackExtension.testDevice(await transport.endpoint(named: "tv")))
        let speakerSession = MediaOutputSession(deviceID: speaker.id)
        await ext.activateDevice(speaker, session: speakerSession, for: [])
        #expect(await log.first { if case .activatedDevice(_, let s) = $0, s == speakerSession { true } else { nil } } == true)

        let tvSession = MediaOutputSession(deviceID: tv.id)
        await ext.activateDevice(tv, session: tvSession, for: [.urlPlayback])
        let method = await log.first { event -> MediaOutputDevice.AuthorizationMethod? in
            if case .requestPairingCode(_, let s, _, let method) = event, s == tvSession { return method }
            return nil
        }
        #expect(method == .numericCode(length: .fourCharacter))
    }

    @Test func aSilentDeviceFailsActivationWithATypedTimeout() async throws {
        var silent = LoopbackRig.speaker
        silent.replyDelay = 3600
        let (transport, ext, log) = make([silent], requestTimeout: .seconds(2))
        let device = try #require(LoopbackExtension.testDevice(await transport.endpoint(named: "speaker")))
        await ext.activateDevice(device, session: MediaOutputSession(deviceID: device.id), for: [])
        #expect(await advance(clock, by: .milliseconds(500), upTo: .seconds(10)) { log.events.value.count == 1 })
        guard case .failedToActivateDevice(_, _, let error) = log.events.value.first else {
            Issue.record("expected a failed activation, got \(log.events.value)"); return
        }
        #expect(error.code == .connectionFailed)
        #expect(error.message.contains("timedOut"))
        #expect(await eventually { await transport.connectionCount(to: "speaker") == 0 })
    }

    @Test func playbackCommandsReachTheDeviceInOrder() async throws {
        let (transport, ext, log) = make([LoopbackDeviceSpec(name: "tv", kind: .tv, mediaDuration: 300)])
        let device = try #require(LoopbackExtension.testDevice(await transport.endpoint(named: "tv")))
        let session = MediaOutputSession(deviceID: device.id)
        await ext.activateDevice(device, session: session, for: [.urlPlayback])
        _ = await log.first { if case .activatedDevice = $0 { true } else { nil } }
        await ext.startSession(session, identifier: nil, url: URL(string: "http://m/film.mkv")!)
        let control = try #require(await log.first { event -> (any InterfaceControllable)? in
            if case .started(_, let control, _) = event { return control }
            return nil
        })
        #expect(control.metadata.title == "film.mkv")
        #expect(control.timeRange == 0...300)
        control.pause()
        control.seek(to: 120)
        control.play()
        // The device's own report, not the optimistic state, must end up at 120 and playing.
        #expect(await eventually { control.snapshot.state == .playing && control.snapshot.position == 120 })
        clock.advance(by: .seconds(4))
        #expect(control.currentPlaybackPosition == 124)
        control.seek(to: 1000)
        #expect(await eventually { control.snapshot.position == 300 })
    }
}

extension LoopbackExtension {
    /// The device a loopback endpoint stands for, as discovery would report it.
    static func testDevice(_ endpoint: Endpoint?) -> MediaOutputDevice? {
        endpoint.flatMap(device(for:))
    }
}
