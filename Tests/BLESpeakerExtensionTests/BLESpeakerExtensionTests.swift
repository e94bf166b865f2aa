import BLESpeakerExtension
import BlueZTransport
import DBus
import Foundation
import MediaDevice
import MediaRouteTestSupport
import RouteSystem
import Testing
import Transport
import RoutingModel
import SampleSink
import MediaRouteTesting

@Suite(.timeLimit(.minutes(1)), .enabled(if: BlueZMock.available))
struct BLESpeakerExtensionTests {
    struct Rig {
        let mock: BlueZMock
        let system: RouteSystem
        let transport: BlueZTransport
        let recorder: EventRecorder
        let speaker: DBusObjectPath
        let extensions: Locked<[BLESpeakerExtension]>

        func volumeState() async throws -> [UInt8] {
            try await mock.call("VolumeState", [.objectPath(speaker)]).first?.bytes ?? []
        }
    }

    /// A mock with one VCS speaker (volume 100) and the extension loaded in a routing system.
    func makeRig(pairing: (method: String, code: String) = ("passkey", "123456"), answers: [ScriptedPairingAgent.Answer] = [.code("123456")],
                 connectScript: [String] = []) async throws -> Rig {
        let mock = try await BlueZMock()
        try await mock.addAdapter()
        let speaker = try await mock.addDevice("AA:00:00:00:00:01", name: "Kitchen Speaker")
        try await mock.call("AddVolumeControl", [.objectPath(speaker), .byte(100), .bool(false), .byte(16)])
        try await mock.call("SetPairing", [.objectPath(speaker), .string(pairing.method), .string(pairing.code)])
        if !connectScript.isEmpty { try await mock.call("SetConnectScript", [.objectPath(speaker), .strings(connectScript)]) }
        // Signals held back up to 300 ms in a burst: what the cache shows right after
        // pairing or connecting must not depend on how soon they are read.
        let manager = BlueZObjectManager(connection: mock.connection, signalCoalescing: .milliseconds(300))
        try await manager.start()
        let transport = BlueZTransport(objectManager: manager, configuration: .init(retryDelay: .milliseconds(20)))
        let system = RouteSystem()
        let recorder = await EventRecorder(system)
        let extensions = Locked<[BLESpeakerExtension]>([])
        try await system.load { routingManager in
            let ext = BLESpeakerExtension(transport: transport, routingManager: routingManager)
            extensions.withLock { $0.append(ext) }
            return ext
        }
        await system.setPairingAgent(ScriptedPairingAgent(answers))
        await system.beginDiscovery(client: "test")
        _ = await eventually { await system.devicesList.count == 1 }
        return Rig(mock: mock, system: system, transport: transport, recorder: recorder, speaker: speaker, extensions: extensions)
    }

    @Test func pairsWithAPasskeyThenControlsTheVolume() async throws {
        let rig = try await makeRig()
        defer { Task { await rig.mock.stop() } }
        let device = try #require(await rig.system.devicesList.first)
        #expect(device.deviceType == .speaker)
        #expect(device.id.hasSuffix("AA:00:00:00:00:01"))
        let route = try await rig.system.activate(deviceID: device.id)
        let properties = try #require(await rig.transport.objectManager.properties(of: rig.speaker, BlueZ.device))
        #expect(properties["Paired"]?.bool == true)
        // Paired, not trusted: BlueZ keeps asking the agent, which grants only the audio profiles.
        #expect(properties["Trusted"]?.bool == false)
        #expect(abs(try await rig.system.volume(on: route.session).volume - 100.0 / 255) < 0.001)

        // Absolute: 0.5 → 128.
        try await rig.system.setVolume(0.5, on: route.session)
        #expect(await eventually { (try? await rig.volumeState()) == [128, 0, 1] })
        // Mute and unmute.
        try await rig.system.setMuted(true, on: route.session)
        #expect(await eventually { (try? await rig.volumeState())?.prefix(2) == [128, 1] })
        #expect(await eventually { (try? await rig.system.volume(on: route.session).muted) == true })
        try await rig.system.setMuted(false, on: route.session)
        #expect(await eventually { (try? await rig.volumeState())?.prefix(2) == [128, 0] })

        // The speaker's own buttons reach the system.
        try await rig.mock.call("PressVolumeButton", [.objectPath(rig.speaker), .int16(-28)])
        #expect(await eventually { abs(((try? await rig.system.volume(on: route.session).volume) ?? 0) - 100.0 / 255) < 0.001 })
        let volumeEvent = await rig.recorder.first { event -> Bool? in
            if case .volumeChanged(let changed, let volume, _) = event, changed == route, abs(volume - 100.0 / 255) < 0.001 { return true }
            return nil
        }
        #expect(volumeEvent == true)

        // A stale counter (another client changed it): read again, retry once, and it lands.
        try await rig.mock.call("BumpCounter", [.objectPath(rig.speaker)])
        try await rig.system.setVolume(1.0, on: route.session)
        #expect(await eventually { (try? await rig.volumeState())?.first == 255 })
        let writes = try await rig.mock.call("ControlPointWrites", [.objectPath(rig.speaker)]).first?.array?.compactMap(\.bytes) ?? []
        #expect(writes.suffix(2).map { Array($0.prefix(1) + $0.suffix(1)) } == [[4, 255], [4, 255]], "a refused write, then the retry: \(writes)")
        #expect(writes.suffix(2).map { $0[1] } == [4, 5], "the retry carries the counter read again")
    }

    /// Found speakers stay listed once discovery stops, but nothing is heard while it is
    /// stopped: a speaker whose adapter was unplugged meanwhile is dropped when discovery
    /// starts again, one still in BlueZ's list stays.
    @Test func aSpeakerWhoseAdapterWentWhileDiscoveryWasStoppedIsDroppedAtTheNextStart() async throws {
        let rig = try await makeRig()
        defer { Task { await rig.mock.stop() } }
        try await rig.mock.addAdapter("hci1", address: "00:11:22:33:44:66")
        try await rig.mock.addDevice("AA:00:00:00:00:02", name: "Den Speaker", adapter: "hci1")
        await rig.system.endDiscovery(client: "test")
        #expect(await rig.system.devicesList.map(\.displayName) == ["Kitchen Speaker"], "kept while stopped")
        try await rig.mock.call("RemoveAdapter", [.string("hci0")])
        #expect(await eventually { await rig.transport.adapter()?.rawValue == "/org/bluez/hci1" })
        #expect(await rig.system.devicesList.map(\.displayName) == ["Kitchen Speaker"], "nothing heard while stopped")

        await rig.system.beginDiscovery(client: "test")
        #expect(await eventually { await rig.system.devicesList.map(\.displayName) == ["Den Speaker"] })
        #expect(rig.recorder.deviceEventNames.contains("lost:Kitchen Speaker"))

        // A speaker still there is kept across a stop and a start.
        await rig.system.endDiscovery(client: "test")
        await rig.system.beginDiscovery(client: "test")
        try await Task.sleep(for: .milliseconds(300))
        #expect(await rig.system.devicesList.map(\.displayName) == ["Den Speaker"])
    }

    @Test func relativeStepsUnmuteFirstWhenMuted() async throws {
        let rig = try await makeRig()
        defer { Task { await rig.mock.stop() } }
        let device = try #require(await rig.system.devicesList.first)
        let route = try await rig.system.activate(deviceID: device.id)
        try await rig.system.setMuted(true, on: route.session)
        #expect(await eventually { (try? await rig.volumeState())?[1] == 1 })
        // The routing system steps absolute devices absolutely; the extension's own
        // relative path (opcodes 0x00–0x03) is what a relative-only caller gets.
        let speaker = try #require(await rig.system.reportedDevice(for: route.key))
        let ext = try #require(rig.extensions.value.first)
        #expect(await eventually { await ext.isDeviceMuted(speaker) }, "the extension has seen its mute land")
        await ext.changeVolume(by: 2, for: speaker)
        #expect(await eventually { (try? await rig.volumeState())?.prefix(2) == [132, 0] }, "unmuted and two steps of 16 up")
        let writes = try await rig.mock.call("ControlPointWrites", [.objectPath(rig.speaker)]).first?.array?.compactMap(\.bytes) ?? []
        #expect(writes.suffix(2).map(\.first) == [0x03, 0x01], "unmute+up while muted, then plain up: \(writes)")
        await ext.changeVolume(by: -1, for: speaker)
        #expect(await eventually { (try? await rig.volumeState())?.first == 116 })
    }

    @Test(arguments: [
        ("passkey", "123456", ScriptedPairingAgent.Answer.code("654321"), "AuthenticationFailed"),
        ("passkey", "123456", .cancel, "Canceled"),
        ("confirm", "424242", .code(""), "Rejected"),
    ])
    func pairingFailuresAreAuthorizationFailed(method: String, code: String, answer: ScriptedPairingAgent.Answer, reason: String) async throws {
        let rig = try await makeRig(pairing: (method, code), answers: [answer])
        defer { Task { await rig.mock.stop() } }
        let device = try #require(await rig.system.devicesList.first)
        do {
            _ = try await rig.system.activate(deviceID: device.id)
            Issue.record("activated with \(answer)")
        } catch let error as MediaDeviceError {
            #expect(error.code == .authorizationFailed, "\(error)")
            #expect(error.message.contains(reason), "\(error)")
        }
        #expect(await rig.transport.objectManager.properties(of: rig.speaker, BlueZ.device)?["Paired"]?.bool == false)
    }

    @Test(arguments: [
        ("pin", "0000", ScriptedPairingAgent.Answer.code("0000")),
        ("confirm", "424242", .code("yes")),
        ("display-passkey", "012345", .code("ok")),
        ("display-pin", "9999", .code("ok")),
    ])
    func everyAgentQuestionReachesThePerson(method: String, code: String, answer: ScriptedPairingAgent.Answer) async throws {
        let rig = try await makeRig(pairing: (method, code), answers: [answer])
        defer { Task { await rig.mock.stop() } }
        let device = try #require(await rig.system.devicesList.first)
        _ = try await rig.system.activate(deviceID: device.id)
        #expect(await rig.transport.objectManager.properties(of: rig.speaker, BlueZ.device)?["Paired"]?.bool == true)
    }

    @Test func aDroppedLinkEndsTheRoute() async throws {
        let rig = try await makeRig()
        defer { Task { await rig.mock.stop() } }
        let device = try #require(await rig.system.devicesList.first)
        let route = try await rig.system.activate(deviceID: device.id)
        _ = try await rig.mock.connection.call(destination: BlueZ.busName, path: rig.speaker, interface: BlueZ.device, member: "Disconnect")
        let ended = await rig.recorder.first { event -> Bool? in
            if case .routeDeactivated(let r, let reason?) = event, r == route { return reason.code == .connectionFailed }
            return nil
        }
        #expect(ended == true)
    }

    @Test func acquireWriteHandsOverASocket() async throws {
        let rig = try await makeRig()
        defer { Task { await rig.mock.stop() } }
        try await rig.transport.connectDevice(rig.speaker)
        let point = try #require(await rig.transport.waitForCharacteristic(BlueZ.volumeControlPoint, of: rig.speaker))
        let (fd, mtu) = try await rig.transport.acquireWrite(point)
        #expect(mtu == 64)
        let frame: [UInt8] = Array(0..<60)
        let sent = frame.withUnsafeBytes { write(fd.rawValue, $0.baseAddress, $0.count) }
        #expect(sent == 60)
        #expect(await eventually { ((try? await rig.mock.call("AcquiredWrites", [.objectPath(rig.speaker)]).first?.array?.compactMap(\.bytes)) ?? []) == [frame] })
    }

    @Test func acquireNotifyDeliversNotificationsOnASocket() async throws {
        let rig = try await makeRig()
        defer { Task { await rig.mock.stop() } }
        try await rig.transport.connectDevice(rig.speaker)
        let state = try #require(await rig.transport.waitForCharacteristic(BlueZ.volumeState, of: rig.speaker))
        let (fd, mtu) = try await rig.transport.acquireNotify(state)
        #expect(mtu == 23)
        try await rig.mock.call("PressVolumeButton", [.objectPath(rig.speaker), .int16(10)])
        var buffer = [UInt8](repeating: 0, count: 64)
        var poller = pollfd(fd: fd.rawValue, events: Int16(POLLIN), revents: 0)
        #expect(poll(&poller, 1, 5000) == 1)
        let count = buffer.withUnsafeMutableBytes { recv(fd.rawValue, $0.baseAddress, $0.count, 0) }
        #expect(Array(buffer.prefix(max(count, 0))) == [110, 0, 1])
    }

    @Test func afterABlueZRestartTheAgentIsRegisteredAgain() async throws {
        let rig = try await makeRig(answers: [.code("123456"), .code("123456")])
        defer { Task { await rig.mock.stop() } }
        let device = try #require(await rig.system.devicesList.first)
        _ = try await rig.system.activate(deviceID: device.id)
        await rig.mock.kill()
        _ = await eventually { await rig.system.devicesList.isEmpty }
        try await rig.mock.start()
        try await rig.mock.addAdapter()
        let again = try await rig.mock.addDevice("AA:00:00:00:00:01", name: "Kitchen Speaker")
        try await rig.mock.call("AddVolumeControl", [.objectPath(again), .byte(50), .bool(false), .byte(16)])
        try await rig.mock.call("SetPairing", [.objectPath(again), .string("passkey"), .string("123456")])
        #expect(await eventually { await rig.system.devicesList.count == 1 })
        let fresh = try #require(await rig.system.devicesList.first)
        let route = try await rig.system.activate(deviceID: fresh.id)
        #expect(abs(try await rig.system.volume(on: route.session).volume - 50.0 / 255) < 0.001)
    }
}

@Suite(.timeLimit(.minutes(1)), .enabled(if: BlueZMock.available))
struct MediaTransportTests {
    /// SBC, 44.1 kHz joint stereo, 16 blocks, 8 subbands, loudness, bitpool 2–53.
    static let sbcConfiguration: [UInt8] = [0x21, 0x15, 2, 53]

    func makeRig(codec: UInt8) async throws -> (BLESpeakerExtensionTests.Rig, ActiveRoute) {
        let mock = try await BlueZMock()
        try await mock.addAdapter()
        let speaker = try await mock.addDevice("AA:00:00:00:00:07", name: "Den Speaker", uuids: [BlueZ.audioSink])
        try await mock.call("AddMediaTransport", [.objectPath(speaker), .byte(codec), .bytes(Self.sbcConfiguration), .uint16(64), .string(BlueZ.audioSink)])
        let manager = BlueZObjectManager(connection: mock.connection)
        try await manager.start()
        let transport = BlueZTransport(objectManager: manager)
        let system = RouteSystem()
        let recorder = await EventRecorder(system)
        try await system.load { routingManager in BLESpeakerExtension(transport: transport, routingManager: routingManager) }
        await system.beginDiscovery(client: "test")
        _ = await eventually { await system.devicesList.count == 1 }
        let device = try #require(await system.devicesList.first)
        let route = try await system.activate(deviceID: device.id)
        let rig = BLESpeakerExtensionTests.Rig(mock: mock, system: system, transport: transport, recorder: recorder, speaker: speaker, extensions: Locked([]))
        return (rig, route)
    }

    func transportVolume(_ rig: BLESpeakerExtensionTests.Rig) async throws -> Int64? {
        try await rig.mock.connection.call(
            destination: BlueZ.busName, path: DBusObjectPath(rig.speaker.rawValue + "/fd0")!, interface: "org.freedesktop.DBus.Properties",
            member: "Get", [.string(BlueZ.mediaTransport), .string("Volume")]).first?.integer
    }

    @Test func a2dpVolumeAndSBCPacketsOfTheMTU() async throws {
        let (rig, route) = try await makeRig(codec: 0x00)
        defer { Task { await rig.mock.stop() } }
        #expect(abs(try await rig.system.volume(on: route.session).volume - 64.0 / 127) < 0.001)
        try await rig.system.setVolume(1.0, on: route.session)
        #expect(await eventually { (try? await transportVolume(rig)) == 127 })
        try await rig.mock.call("SpeakerSetsTransportVolume", [.objectPath(rig.speaker), .uint16(32)])
        #expect(await eventually { abs(((try? await rig.system.volume(on: route.session).volume) ?? 0) - 32.0 / 127) < 0.001 })

        let sink = try await rig.system.startRealtimeSampleDelivery(on: route.session)
        // Half a second of a 440 Hz tone, stereo S16LE, in 10 ms buffers.
        var frame = 0
        for _ in 0..<50 {
            var data: [UInt8] = []
            for _ in 0..<441 {
                let value = Int16(sin(Double(frame) * 2 * .pi * 440 / 44_100) * 8000)
                for _ in 0..<2 { data += [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)] }
                frame += 1
            }
            try await sink.send(SampleBuffer(format: .cdAudio, presentationTime: .zero, frameCount: 441, data: data))
        }
        await sink.finish()
        @Sendable func frames() async -> Int {
            let packets = (try? await rig.mock.call("TransportPackets", [.objectPath(rig.speaker)]).first?.array?.compactMap(\.bytes)) ?? []
            return packets.reduce(0) { $0 + Int($1[12]) }
        }
        // 22 050 samples are 172 frames of 128: paced at 44.1 kHz they take half a second, and
        // at the end of the stream (the writer closed) the encoder's last packet is flushed.
        let flushed = await eventually(timeout: .seconds(5)) { await frames() == 172 }
        let statistics = await rig.system.audioStatistics(on: route.session)
        let sent = await frames()
        #expect(flushed, "the end of the stream flushes the last frames: \(sent) of 172; \(String(describing: statistics))")
        #expect(statistics?.underruns == 0)
        let packets = try await rig.mock.call("TransportPackets", [.objectPath(rig.speaker)]).first?.array?.compactMap(\.bytes) ?? []
        #expect(packets.allSatisfy { $0.count <= 895 && $0[0] == 0x80 && $0[1] == 96 && $0[13] == 0x9C })
        let sequences = packets.map { Int($0[2]) << 8 | Int($0[3]) }
        #expect(sequences == Array(0..<packets.count))
        #expect(packets.dropLast().allSatisfy { $0.count > 895 - 120 }, "packets are filled to the MTU")
    }

    @Test func aCodecWeCannotEncodeIsAClearError() async throws {
        let (rig, route) = try await makeRig(codec: 0x02)  // AAC
        defer { Task { await rig.mock.stop() } }
        _ = try await rig.system.startRealtimeSampleDelivery(on: route.session)
        let reason = await rig.recorder.first { event -> MediaDeviceError? in
            if case .sessionEnded(let ended, let reason?) = event, ended == route { return reason }
            return nil
        }
        #expect(reason?.code == .unsupported)
        #expect(reason?.message.contains("AAC") == true, "\(String(describing: reason))")
    }
}
