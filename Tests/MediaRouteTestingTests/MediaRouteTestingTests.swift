import LoopbackExtension
import LoopbackTransport
import MediaClock
import MediaDevice
import RoutingModel
import MediaRouteTesting
import Testing

/// The testing product drives a real extension (the loopback one) as an extension author would.
@Suite struct MediaRouteTestingTests {
    @Test func aRecordedExtensionReportsBuiltDevicesAsTheyComeAndGo() async throws {
        let clock = ManualHostClock()
        let tv = LoopbackDeviceBuilder.tv("Living Room TV").pin("1234").build()
        let speaker = LoopbackDeviceBuilder.speaker("Kitchen Speaker").appearing(after: 2).disappearing(after: 5).build()
        #expect(tv.name == "living-room-tv" && tv.kind == .tv && tv.pin == "1234")
        let recorder = RecordingRoutingManager()
        let loopback = LoopbackExtension(
            transport: LoopbackDeviceBuilder.transport(with: [tv, speaker], clock: clock), routingManager: recorder.manager, clock: clock)
        await loopback.startDeviceDiscovery()

        let found = try await recorder.foundDevice(named: "Living Room TV")
        #expect(recorder.devices.map(\.displayName) == ["Living Room TV"])
        #expect(await recorder.first(within: .milliseconds(50)) { if case .foundDevice(let device) = $0 { device.displayName == "Kitchen Speaker" } else { false } } == nil)

        clock.advance(by: .seconds(3))
        _ = try await recorder.foundDevice(named: "Kitchen Speaker")
        #expect(Set(recorder.devices.map(\.displayName)) == ["Living Room TV", "Kitchen Speaker"])
        clock.advance(by: .seconds(3))
        let lost = await recorder.first { if case .lostDevice(let device) = $0 { device.displayName == "Kitchen Speaker" } else { false } }
        #expect(lost != nil)
        #expect(recorder.devices.map(\.displayName) == ["Living Room TV"])

        // The PIN the built TV demands comes back as a pairing request, then a wrong one fails activation.
        let session = MediaOutputSession(deviceID: found.id)
        await loopback.activateDevice(found, session: session, for: found.capabilities)
        let request = await recorder.first { if case .requestPairingCode = $0 { true } else { false } }
        #expect(request != nil)
        await loopback.connectUsingPairingCode("0000", to: found, session: session)
        let failed = await recorder.first { if case .failedToActivateDevice = $0 { true } else { false } }
        #expect(failed != nil)
        await loopback.stopDeviceDiscovery()
    }

    @Test func aWaitThatNothingAnswersEndsAtItsLimit() async {
        let recorder = RecordingRoutingManager()
        let start = ContinuousClock.now
        let event = await recorder.first(within: .milliseconds(30)) { _ in true }
        #expect(event == nil)
        #expect(ContinuousClock.now - start >= .milliseconds(30))
        await #expect(throws: RecordingError.self) { try await recorder.foundDevice(named: "nobody", within: .milliseconds(10)) }
    }

    @Test func aFaultyDeviceIsBuiltWithItsFaults() {
        let spec = LoopbackDeviceBuilder.speaker("Porch")
            .refusingConnections().droppingConnections(after: 4).replying(after: 0.5).volume(2)
            .changingVolume(to: 0.2, after: 1).mediaDuration(30).reached(through: "hci1").build()
        #expect(spec.kind == .speaker && spec.refusesConnections && spec.dropConnectionAfter == 4 && spec.replyDelay == 0.5)
        #expect(spec.volume == 1 && spec.deviceVolumeChanges == [.init(after: 1, volume: 0.2)] && spec.mediaDuration == 30 && spec.adapter == "hci1")
    }
}
