import BLESpeakerExtension
import BlueZTransport
import BoxConfiguration
import CSbc
import DBus
import ExtensionCatalogue
import Foundation
import MediaClock
import MediaDevice
import MediaRouteTestSupport
import RouteSystem
import Testing
import RoutingModel
import SampleSink
import MediaRouteTesting

/// PCM (stereo S16 samples, interleaved) from A2DP media packets: RTP header, SBC payload header, frames.
func decodeSBC(_ packets: [[UInt8]]) -> [Int16] {
    var sbc = sbc_t()
    sbc_init(&sbc, 0)
    defer { sbc_finish(&sbc) }
    var samples: [Int16] = []
    var output = [UInt8](repeating: 0, count: 4096)
    for packet in packets where packet.count > 13 {
        var offset = 13
        while offset < packet.count {
            var written = 0
            let consumed = packet.withUnsafeBytes { input in
                output.withUnsafeMutableBytes { out in
                    sbc_decode(&sbc, input.baseAddress! + offset, packet.count - offset, out.baseAddress!, out.count, &written)
                }
            }
            guard consumed > 0 else { break }
            offset += consumed
            for index in stride(from: 0, to: written - 1, by: 2) {
                samples.append(Int16(bitPattern: UInt16(output[index]) | UInt16(output[index + 1]) << 8))
            }
        }
    }
    return samples
}

/// The best normalised cross-correlation of `received` against `source` over lags 0…`maximumLag` (mono: left channel).
func bestCorrelation(_ source: [Int16], _ received: [Int16], maximumLag: Int = 400) -> Double {
    let left = { (samples: [Int16]) in stride(from: 0, to: samples.count, by: 2).map { Double(samples[$0]) } }
    let a = left(source)
    let b = left(received)
    var best = 0.0
    for lag in 0...maximumLag {
        let count = min(a.count, b.count - lag) - 2_000  // leave the codec's start-up out
        guard count > 1_000 else { break }
        var dot = 0.0, aa = 0.0, bb = 0.0
        for index in 1_000..<(1_000 + count) {
            dot += a[index] * b[index + lag]
            aa += a[index] * a[index]
            bb += b[index + lag] * b[index + lag]
        }
        if aa > 0, bb > 0 { best = max(best, dot / (aa * bb).squareRoot()) }
    }
    return best
}

@Suite(.timeLimit(.minutes(1)), .enabled(if: BlueZMock.available), .serialized) struct A2DPSourceTests {
    typealias Rig = BLESpeakerExtensionTests.Rig

    func makeRig(
        sinkCapabilities: [UInt8], source: A2DPSourceCodec? = .sbc, sources: [A2DPSourceCodec]? = nil,
        sinkEndpoints: [(codec: UInt8, capabilities: [UInt8])]? = nil, audioStreamWait: Duration = .seconds(1),
        clock: any HostClock = SystemHostClock(), stepsAside: Bool = false, anotherSourceFirst: Bool = false
    ) async throws -> Rig {
        let mock = try await BlueZMock()
        try await mock.addAdapter()
        if anotherSourceFirst { try await mock.call("AnotherSourceRegisters", [.string("hci0"), .bool(true)]) }
        let speaker = try await mock.addDevice("AA:00:00:00:00:0A", name: "Hall Speaker", uuids: [BlueZ.audioSink])
        try await mock.call("SetSinkCapabilities", [.objectPath(speaker), .bytes(sinkCapabilities)])
        if let sinkEndpoints {
            try await mock.call("SetSinkEndpoints", [.objectPath(speaker), .array(elementSignature: "(yay)", sinkEndpoints.map { .structure([.byte($0.codec), .bytes($0.capabilities)]) })])
        }
        let manager = BlueZObjectManager(connection: mock.connection)
        try await manager.start()
        let transport = BlueZTransport(
            objectManager: manager, configuration: .init(a2dpSources: sources ?? (source.map { [$0] } ?? []), a2dpSourceStepsAside: stepsAside))
        let system = RouteSystem()
        let recorder = await EventRecorder(system)
        try await system.load { routingManager in
            BLESpeakerExtension(transport: transport, routingManager: routingManager, audioStreamWait: audioStreamWait, clock: clock)
        }
        await system.beginDiscovery(client: "test")
        _ = await eventually { await system.devicesList.count == 1 }
        return Rig(mock: mock, system: system, transport: transport, recorder: recorder, speaker: speaker, extensions: Locked([]))
    }

    func a2dpState(_ rig: Rig) async throws -> (state: String, configuration: [UInt8], profiles: [String]) {
        let reply = try await rig.mock.call("A2DPState", [.objectPath(rig.speaker)])
        return (reply[0].string ?? "", reply[1].bytes ?? [], reply[2].array?.compactMap(\.string) ?? [])
    }

    @Test func aClassicSpeakerStreamsSBCThroughOurSourceEndpoint() async throws {
        let rig = try await makeRig(sinkCapabilities: [0x3F, 0xFF, 2, 35])
        defer { Task { await rig.mock.stop() } }
        // Discovery looks at BR/EDR too, and the source endpoint is registered with SBC's capabilities.
        let filters = try await rig.mock.call("DiscoveryFilters", [.string("hci0")]).first?.array ?? []
        #expect(filters.last?.dictionary?["Transport"]?.string == "auto")
        let endpoints = try await rig.mock.call("Endpoints").first?.array ?? []
        #expect(endpoints.count == 1)
        guard case .structure(let endpoint)? = endpoints.first?.unwrapped else { Issue.record("no endpoint: \(endpoints)"); return }
        #expect(endpoint.count == 5 && endpoint[2].string == A2DPSourceEndpoint.sourceUUID && endpoint[4].bytes == [0xFF, 0xFF, 2, 53])

        let device = try #require(await rig.system.devicesList.first)
        let route = try await rig.system.activate(deviceID: device.id)
        let state = try await a2dpState(rig)
        #expect(state.state == "configured")
        #expect(state.configuration == [0x21, 0x15, 2, 35], "44.1 kHz joint stereo, 16 blocks, 8 subbands, loudness, the speaker's bitpool")
        #expect(state.profiles.contains(BlueZ.audioSink), "the A2DP sink profile is connected explicitly")
        let transportPath = DBusObjectPath(rig.speaker.rawValue + "/fd0")!
        #expect(await rig.transport.a2dpSource?.configuration(of: transportPath) == [0x21, 0x15, 2, 35])
        do {
            _ = try await rig.system.acquireAudio(on: route.session, format: SampleBuffer.Format(encoding: .pcmS16LE, sampleRate: 48_000, channels: 2))
            Issue.record("48 kHz was taken by a 44.1 kHz stream")
        } catch let error as MediaDeviceError {
            #expect(error.message.contains("44100 Hz"), "\(error.message)")
        }

        // Half a second of a 1 kHz tone through paced delivery comes out of the speaker's SBC decoder.
        var source: [Int16] = []
        for frame in 0..<22_050 {
            let value = Int16(sin(Double(frame) * 2 * .pi * 1_000 / 44_100) * 12_000)
            source += [value, value]
        }
        // Written from a thread of its own, as an app writes: blocked by the socket, woken by the kernel.
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let bytes = source.flatMap { [UInt8(truncatingIfNeeded: $0), UInt8(truncatingIfNeeded: $0 >> 8)] }
        let descriptor = acquisition.descriptor
        let writer = Thread {
            writeBlocking(bytes, to: descriptor, piece: 4_096)
            close(descriptor)
        }
        writer.start()
        #expect(await eventually { await rig.system.audioStatistics(on: route.session)?.active == false })
        @Sendable func packets() async -> [[UInt8]] {
            (try? await rig.mock.call("TransportPackets", [.objectPath(rig.speaker)]).first?.array?.compactMap(\.bytes)) ?? []
        }
        #expect(await eventually { decodeSBC(await packets()).count >= 2 * 22_000 })
        let decoded = decodeSBC(await packets())
        let statistics = try #require(await rig.system.audioStatistics(on: route.session))
        #expect(statistics.underruns == 0, "the writer kept ahead of the device (a machine too loaded for real time shows here)")
        let correlation = bestCorrelation(source, decoded)
        #expect(correlation >= 0.99, "cross-correlation \(correlation)")

        // Ending the route ends the stream: BlueZ clears the configuration it set.
        await rig.system.deactivate(route.session)
        #expect(await eventually { await rig.transport.a2dpSource?.configuration(of: transportPath) == nil })
    }

    @Test func aSpeakerWhoseCapabilitiesFitNothingIsRefusedClearly() async throws {
        let rig = try await makeRig(sinkCapabilities: [0x0F, 0xFF, 2, 53])  // no sampling frequency
        defer { Task { await rig.mock.stop() } }
        let device = try #require(await rig.system.devicesList.first)
        let route = try await rig.system.activate(deviceID: device.id)
        #expect(try await a2dpState(rig).state == "SelectConfiguration failed: org.bluez.Error.InvalidArguments")
        _ = try await rig.system.startRealtimeSampleDelivery(on: route.session)
        let reason = await rig.recorder.first { event -> MediaDeviceError? in
            if case .sessionEnded(let ended, let reason?) = event, ended == route { return reason }
            return nil
        }
        #expect(reason?.code == .unsupported, "\(String(describing: reason))")
    }

    @Test func withTheSourceOffNoEndpointIsRegistered() async throws {
        let rig = try await makeRig(sinkCapabilities: [0xFF, 0xFF, 2, 53], source: nil)
        defer { Task { await rig.mock.stop() } }
        #expect(try await rig.mock.call("Endpoints").first?.array?.isEmpty == true)
        let device = try #require(await rig.system.devicesList.first)
        _ = try await rig.system.activate(deviceID: device.id)
        #expect(try await a2dpState(rig).state == "no source endpoint")
        let configuration = try DaemonConfiguration.parse("[bluetooth]\na2dp-source = no\n", file: "test.conf")
        #expect(configuration.bluetoothA2DPSource == false)
        #expect(throws: (any Error).self) { try DaemonConfiguration.parse("[bluetooth]\na2dp-source = maybe\n", file: "test.conf") }
        // `auto` is the default: register unless another source did first; `yes` registers beside it.
        #expect(DaemonConfiguration().bluetoothA2DPSource && DaemonConfiguration().bluetoothA2DPSourceStepsAside)
        let yes = try DaemonConfiguration.parse("[bluetooth]\na2dp-source = yes\n", file: "test.conf")
        #expect(yes.bluetoothA2DPSource && !yes.bluetoothA2DPSourceStepsAside)
        let auto = try DaemonConfiguration.parse("[bluetooth]\na2dp-source = Auto\n", file: "test.conf")
        #expect(auto.bluetoothA2DPSource && auto.bluetoothA2DPSourceStepsAside)
    }

    /// One A2DP source per box: with `a2dp-source = auto`, PipeWire's bluez5 plugin (or
    /// bluez-alsa) registered first — bluetoothd lists the A2DP Source service on the adapter —
    /// and MediaRoute registers none; when that source goes, MediaRoute registers its own and
    /// streams as usual. With `yes` it registers beside the other.
    @Test func anotherA2DPSourceRegisteredFirstMakesOursStepAsideUntilItGoes() async throws {
        let rig = try await makeRig(sinkCapabilities: [0xFF, 0xFF, 2, 53], stepsAside: true, anotherSourceFirst: true)
        defer { Task { await rig.mock.stop() } }
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await rig.mock.call("Endpoints").first?.array?.isEmpty == true, "stepped aside")
        #expect(await rig.transport.a2dpSourceOwner(on: "/org/bluez/hci0") == .another)
        try await rig.mock.call("AnotherSourceRegisters", [.string("hci0"), .bool(false)])
        #expect(await eventually { (try? await rig.mock.call("Endpoints").first?.array?.count) == 1 }, "took the role when the other went")
        // The owner is noted once every endpoint's registration was answered, a moment after the first.
        #expect(await eventually { await rig.transport.a2dpSourceOwner(on: "/org/bluez/hci0") == .mediaRoute })
        // And streams through it.
        let device = try #require(await rig.system.devicesList.first)
        let route = try await rig.system.activate(deviceID: device.id)
        #expect(await eventually { await rig.system.routeStatus(on: route.session)?.details.codec == "SBC" })
        await rig.system.deactivate(route.session)

        let beside = try await makeRig(sinkCapabilities: [0xFF, 0xFF, 2, 53], stepsAside: false, anotherSourceFirst: true)
        defer { Task { await beside.mock.stop() } }
        #expect(await eventually { (try? await beside.mock.call("Endpoints").first?.array?.count) == 1 }, "`yes` registers beside the other")
    }

    @Test func aClassicSpeakerKnownOnlyByItsClassOfDeviceIsListed() async throws {
        let mock = try await BlueZMock()
        defer { Task { await mock.stop() } }
        try await mock.addAdapter()
        let speaker = try await mock.addDevice("AA:00:00:00:00:0B", name: "Old Speaker", uuids: [])
        try await mock.call("SetDeviceClass", [.objectPath(speaker), .uint32(0x240414)])  // audio/video, loudspeaker
        let phone = try await mock.addDevice("AA:00:00:00:00:0C", name: "A Phone", uuids: [])
        try await mock.call("SetDeviceClass", [.objectPath(phone), .uint32(0x5A020C)])  // phone, smartphone
        let manager = BlueZObjectManager(connection: mock.connection)
        try await manager.start()
        let transport = BlueZTransport(objectManager: manager)
        let system = RouteSystem()
        try await system.load { routingManager in BLESpeakerExtension(transport: transport, routingManager: routingManager) }
        await system.beginDiscovery(client: "test")
        #expect(await eventually { await system.devicesList.count == 1 })
        try await Task.sleep(for: .milliseconds(100))
        #expect(await system.devicesList.map(\.displayName) == ["Old Speaker"])
    }

    /// A route to the rig's speaker streaming a ramp from a writer of its own, past its first packets.
    func streaming(_ rig: Rig) async throws -> (route: ActiveRoute, descriptor: Int32, writer: Task<Bool, Never>) {
        let device = try #require(await rig.system.devicesList.first)
        let route = try await rig.system.activate(deviceID: device.id)
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let descriptor = acquisition.descriptor
        let writer = writeOnOwnThread(rampFrames(44_100 * 30), to: descriptor, piece: 4_096, closing: false)
        #expect(await eventually {
            ((try? await rig.mock.call("TransportPackets", [.objectPath(rig.speaker)]).first?.array?.count) ?? 0) > 5
        })
        return (route, descriptor, writer)
    }

    func sessionEndReason(_ rig: Rig, _ route: ActiveRoute) async -> MediaDeviceError? {
        await rig.recorder.first(timeout: .seconds(10)) { event -> MediaDeviceError? in
            if case .sessionEnded(let ended, let reason?) = event, ended == route { return reason }
            return nil
        }
    }

    @Test func theSpeakerSuspendingTheStreamEndsItWithAnEventAndItCanStartAgain() async throws {
        let rig = try await makeRig(sinkCapabilities: [0xFF, 0xFF, 2, 53])
        defer { Task { await rig.mock.stop() } }
        let (route, descriptor, writer) = try await streaming(rig)
        try await rig.mock.call("SpeakerSuspends", [.objectPath(rig.speaker)])
        let reason = await sessionEndReason(rig, route)
        #expect(reason?.code == .sessionFailed && reason?.message.contains("suspended") == true, "\(String(describing: reason))")
        #expect(await writer.value == false, "the writer's socket closed under it")
        close(descriptor)
        #expect(await rig.system.activeRoutes.contains { $0.session == route.session }, "the link is up: the route stays")
        #expect(await rig.system.audioStatistics(on: route.session)?.active == false, "statistics stay readable")

        // The next acquisition takes the stream again.
        let before = ((try? await rig.mock.call("TransportPackets", [.objectPath(rig.speaker)]).first?.array?.count) ?? 0)
        let again = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let next = again.descriptor
        let second = writeOnOwnThread(rampFrames(44_100), to: next, piece: 4_096, closing: false)
        #expect(await eventually {
            ((try? await rig.mock.call("TransportPackets", [.objectPath(rig.speaker)]).first?.array?.count) ?? 0) > before + 5
        })
        await rig.system.deactivate(route.session)
        _ = await second.value
        close(next)
    }

    @Test func theSpeakerDroppingItsAudioProfileEndsTheStream() async throws {
        let rig = try await makeRig(sinkCapabilities: [0xFF, 0xFF, 2, 53])
        defer { Task { await rig.mock.stop() } }
        let (route, descriptor, writer) = try await streaming(rig)
        let transportPath = DBusObjectPath(rig.speaker.rawValue + "/fd0")!
        try await rig.mock.call("SpeakerDropsAudioProfile", [.objectPath(rig.speaker)])
        let reason = await sessionEndReason(rig, route)
        #expect(reason?.code == .sessionFailed, "\(String(describing: reason))")
        #expect(await writer.value == false)
        close(descriptor)
        #expect(await rig.transport.a2dpSource?.configuration(of: transportPath) == nil, "BlueZ cleared the configuration")
        do {
            _ = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
            let again = await sessionEndReason(rig, route)
            #expect(again != nil)
        } catch let error as MediaDeviceError {
            // Refused outright (no transport, or the route already gone): typed either way.
            #expect(!error.message.isEmpty, "\(error)")
        }
    }

    @Test func bluezRestartingMidStreamEndsTheRouteLeaksNothingAndRegistersTheSourceAgain() async throws {
        @Sendable func openDescriptors() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1 }
        let rig = try await makeRig(sinkCapabilities: [0xFF, 0xFF, 2, 53])
        defer { Task { await rig.mock.stop() } }
        let baseline = openDescriptors()
        let (route, descriptor, writer) = try await streaming(rig)
        await rig.mock.kill()
        let reason = await rig.recorder.first(timeout: .seconds(10)) { event -> MediaDeviceError? in
            if case .routeDeactivated(let ended, let reason?) = event, ended == route { return reason }
            return nil
        }
        #expect(reason != nil, "the route ends with a reason")
        #expect(await writer.value == false, "the writer's socket closed under it")
        close(descriptor)
        #expect(await rig.system.audioStatistics(on: route.session) == nil)

        // bluetoothd comes back: the source endpoint is registered with its adapter again.
        try await rig.mock.start()
        try await rig.mock.addAdapter()
        #expect(await eventually(timeout: .seconds(10)) {
            ((try? await rig.mock.call("Endpoints").first?.array?.count) ?? 0) == 1
        })
        #expect(await eventually { openDescriptors() <= baseline + 1 }, "descriptors: \(baseline) before, \(openDescriptors()) after")
    }
}
