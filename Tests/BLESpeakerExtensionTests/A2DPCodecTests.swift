import BLESpeakerExtension
import BlueZTransport
import BluetoothAudio
import BoxConfiguration
import DBus
import ExtensionCatalogue
import Foundation
import Logging
import MediaClock
import MediaDevice
import MediaRouteTestSupport
import MediaRouteTesting
import RouteSystem
import RoutingModel
import SampleSink
import Testing

/// The A2DP source with every codec, against the BlueZ stand-in: which codec a speaker gets, the
/// AAC stream decoded back by FFmpeg, a transport that comes late or from the speaker itself, the
/// speaker's delay, and a codec switch mid-stream.
@Suite(.timeLimit(.minutes(1)), .enabled(if: BlueZMock.available), .serialized) struct A2DPCodecTests {
    let base = A2DPSourceTests()
    static let sbcSink: (codec: UInt8, capabilities: [UInt8]) = (0x00, [0xFF, 0xFF, 2, 53])
    static let aacSink: (codec: UInt8, capabilities: [UInt8]) = (0x02, AACCapabilities(objectTypes: 0x80, frequencies: 0x18, channels: 0x3, variableBitRate: true, bitrate: 256_000).bytes)
    /// Opus as Google's A2DP vendor codec (0x000000E0, 0x0001): a codec MediaRoute does not build.
    static let opusSink: (codec: UInt8, capabilities: [UInt8]) = (0xFF, [0xE0, 0, 0, 0, 0x01, 0x00, 0x3C])

    static var everyCodec: [A2DPSourceCodec] { A2DPCodec.defaultPreference.map(A2DPSourceCodec.init) }

    func transportCodec(_ rig: A2DPSourceTests.Rig) async throws -> (codec: UInt8, configuration: [UInt8]) {
        let reply = try await rig.mock.call("TransportCodec", [.objectPath(rig.speaker)])
        return (reply[0].integer.map { UInt8($0) } ?? 0xEE, reply[1].bytes ?? [])
    }

    func packets(_ rig: A2DPSourceTests.Rig) async -> [[UInt8]] {
        (try? await rig.mock.call("TransportPackets", [.objectPath(rig.speaker)]).first?.array?.compactMap(\.bytes)) ?? []
    }

    @Test func everyCodecIsRegisteredMostPreferredFirstWithDelayReporting() async throws {
        let rig = try await base.makeRig(sinkCapabilities: [0xFF, 0xFF, 2, 53], sources: Self.everyCodec)
        defer { Task { await rig.mock.stop() } }
        let endpoints = try await rig.mock.call("Endpoints").first?.array ?? []
        let registered = endpoints.compactMap { value -> (String, UInt8, [UInt8])? in
            guard case .structure(let fields) = value.unwrapped, fields.count == 5, let path = fields[1].objectPath,
                let codec = fields[3].integer, let capabilities = fields[4].bytes else { return nil }
            return (path.rawValue, UInt8(codec), capabilities)
        }
        #expect(registered.map(\.0) == ["ldac", "aptx_hd", "aptx", "aac", "sbc"].map { "/org/mediaroute/bluez/a2dp_source_" + $0 })
        #expect(registered.map(\.1) == [0xFF, 0xFF, 0xFF, 0x02, 0x00])
        #expect(registered[0].2 == [0x2D, 0x01, 0, 0, 0xAA, 0, 0x30, 0x07], "LDAC: Sony's id, 44.1/48 kHz, every channel mode")
        #expect(registered[3].2 == [0xC0, 0x01, 0x8C, 0x84, 0xE2, 0x00], "AAC-LC MPEG-2/4, 44.1/48 kHz, 1–2 channels, VBR, 320 kbit/s")
        let delayReporting = try await rig.mock.call("DelayReportingEndpoints").first?.array?.count
        #expect(delayReporting == 5)
        // The names `[bluetooth] codecs` takes are the codecs' names.
        #expect(DaemonConfiguration.bluetoothCodecNames == A2DPCodec.defaultPreference.map(\.rawValue))
    }

    @Test func aSpeakerWithAACAndSBCGetsAACAndItsToneDecodesBack() async throws {
        guard A2DPCodec.aac.missingLibrary() == nil, FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg") else {
            Issue.record("AAC needs libavcodec59 and ffmpeg (scripts/install-deps.sh)")
            return
        }
        let rig = try await base.makeRig(
            sinkCapabilities: [0xFF, 0xFF, 2, 53], sources: Self.everyCodec, sinkEndpoints: [Self.sbcSink, Self.aacSink])
        defer { Task { await rig.mock.stop() } }
        let device = try #require(await rig.system.devicesList.first)
        let route = try await rig.system.activate(deviceID: device.id)
        let negotiated = try await transportCodec(rig)
        #expect(negotiated.codec == 0x02)
        #expect(negotiated.configuration == [0x80, 0x01, 0x04, 0x03, 0xE8, 0x00], "MPEG-2 AAC-LC, 44.1 kHz, stereo, CBR at the speaker's 256 kbit/s")
        let status = try #require(await rig.system.routeStatus(on: route.session))
        #expect(status.details.codec == "AAC" && status.details.bitrate == 256_000, "\(status.details)")

        let seconds = 2.0
        let source = tone(frames: Int(44_100 * seconds))
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let writer = writeOnOwnThread(source, to: acquisition.descriptor, piece: 4_096)
        _ = await writer.value
        #expect(await eventually { await rig.system.audioStatistics(on: route.session)?.active == false })
        #expect(await eventually { await packets(rig).filter { $0[1] & 0x80 != 0 }.count >= Int(44_100 * seconds) / 1024 - 2 })
        let streaming = try #require(await rig.system.routeStatus(on: route.session))
        #expect(streaming.details.bitrate.map { $0 <= 256_000 && $0 >= 64_000 } == true, "the encoder's rate: \(String(describing: streaming.details.bitrate))")
        let pcm = try runTool("/usr/bin/ffmpeg", ["-v", "error", "-f", "loas", "-i", "pipe:0", "-f", "s16le", "-ac", "2", "-ar", "44100", "pipe:1"], input: loasStream(await packets(rig)))
        let decoded = leftChannel(pcm, width: 2)
        let result = correlation(leftChannel(source, width: 2), decoded)
        #expect(result.value >= 0.99, "correlation \(result.value) of the decoded AAC with the tone")
        let windows = matchingWindows(decoded)
        #expect(windows.total >= 25 && windows.matching == windows.total, "\(windows.matching) of \(windows.total) 50 ms windows match")
        await rig.system.deactivate(route.session)
    }

    /// aptX, aptX HD and LDAC speakers (vendor codecs: told apart by the identifier their element
    /// starts with) get their codec and its packets: aptX decoded back by freeaptxdec, LDAC's
    /// frames checked by their headers (Debian has no LDAC decoder).
    @Test(arguments: [A2DPCodec.aptx, .aptxHD, .ldac]) func aVendorCodecSpeakerGetsItsCodec(_ codec: A2DPCodec) async throws {
        guard codec.missingLibrary() == nil, FileManager.default.isExecutableFile(atPath: "/usr/bin/freeaptxdec") else {
            Issue.record("\(codec) needs its library and freeaptx-utils (scripts/install-deps.sh)")
            return
        }
        let sink: (codec: UInt8, capabilities: [UInt8]) = (0xFF, codec.sourceCapabilities)
        let rig = try await base.makeRig(sinkCapabilities: [0xFF, 0xFF, 2, 53], sources: Self.everyCodec, sinkEndpoints: [Self.sbcSink, sink])
        defer { Task { await rig.mock.stop() } }
        let device = try #require(await rig.system.devicesList.first)
        let route = try await rig.system.activate(deviceID: device.id)
        let negotiated = try await transportCodec(rig)
        #expect(A2DPCodec(codecByte: negotiated.codec, configuration: negotiated.configuration) == codec)
        #expect(await rig.system.routeStatus(on: route.session)?.details.codec == codec.description)
        let source = tone(frames: 44_100 * 2)
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        _ = await writeOnOwnThread(source, to: acquisition.descriptor, piece: 4_096).value
        #expect(await eventually { await rig.system.audioStatistics(on: route.session)?.active == false })
        let received = await packets(rig)
        #expect(received.count > 20)
        switch codec {
        case .aptx, .aptxHD:
            let payload = received.flatMap { codec == .aptxHD ? Array($0.dropFirst(12)) : $0 }
            let pcm = try runTool("/usr/bin/freeaptxdec", codec == .aptxHD ? ["--hd"] : [], input: payload)
            let decoded = leftChannel(pcm, width: 3)
            let windows = matchingWindows(decoded)
            #expect(windows.total >= 25 && windows.matching == windows.total, "\(windows.matching) of \(windows.total) 50 ms windows match")
        default:
            for packet in received {
                #expect(packet[0] == 0x80 && packet[1] == 96 && packet.count > 16 && packet[13] == 0xAA, "RTP, frame count, LDAC sync word")
            }
        }
        await rig.system.deactivate(route.session)
    }

    @Test func aSpeakerWhoseOtherCodecWeDoNotBuildGetsSBC() async throws {
        let rig = try await base.makeRig(
            sinkCapabilities: [0xFF, 0xFF, 2, 53], sources: Self.everyCodec, sinkEndpoints: [Self.opusSink, Self.sbcSink])
        defer { Task { await rig.mock.stop() } }
        let device = try #require(await rig.system.devicesList.first)
        let route = try await rig.system.activate(deviceID: device.id)
        #expect(try await transportCodec(rig).codec == 0x00)
        #expect(await rig.system.routeStatus(on: route.session)?.details.codec == "SBC")
    }

    @Test func theConfiguredOrderDecides() async throws {
        // `[bluetooth] codecs = sbc, aac`: SBC first even though the speaker takes AAC.
        let configuration = try DaemonConfiguration.parse("[bluetooth]\ncodecs = sbc, aac\n", file: "test.conf")
        #expect(configuration.bluetoothCodecs == ["sbc", "aac"])
        #expect(try DaemonConfiguration.parse("[bluetooth]\ncodecs = aac\n", file: "t.conf").bluetoothCodecs == ["aac", "sbc"], "SBC always")
        #expect(throws: (any Error).self) { try DaemonConfiguration.parse("[bluetooth]\ncodecs = aac, mp3\n", file: "t.conf") }
        #expect(throws: (any Error).self) { try DaemonConfiguration.parse("[bluetooth]\ncodecs = aac, aac\n", file: "t.conf") }
        let offered = A2DPSourceCodec.offered(preference: configuration.bluetoothCodecs, logger: Logger(label: "test"))
        let rig = try await base.makeRig(
            sinkCapabilities: [0xFF, 0xFF, 2, 53], sources: offered, sinkEndpoints: [Self.aacSink, Self.sbcSink])
        defer { Task { await rig.mock.stop() } }
        let device = try #require(await rig.system.devicesList.first)
        _ = try await rig.system.activate(deviceID: device.id)
        #expect(try await transportCodec(rig).codec == 0x00)
    }

    @Test func aMissingCodecLibraryIsANoticeNotAnError() {
        #expect(A2DPCodec.sbc.missingLibrary(libraryPath: "") == nil)
        let nowhere = FileManager.default.temporaryDirectory.path + "/no-such-dir"
        for codec in [A2DPCodec.aac, .aptx, .aptxHD, .ldac] {
            // Present here (CI installs them); the notice names the Debian package.
            #expect(codec.missingLibrary(libraryPath: nowhere) == nil, "\(codec)")
        }
        #expect(A2DPCodec.ldac.library?.package == "libldacbt-enc2")
    }

    @Test func aTransportThatComesAfterConnectProfileStreams() async throws {
        let rig = try await base.makeRig(sinkCapabilities: [0xFF, 0xFF, 2, 53], audioStreamWait: .seconds(5))
        defer { Task { await rig.mock.stop() } }
        try await rig.mock.call("SetConfigureAfter", [.objectPath(rig.speaker), .uint32(50)])
        let device = try #require(await rig.system.devicesList.first)
        let route = try await rig.system.activate(deviceID: device.id)
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let writer = writeOnOwnThread(rampFrames(44_100), to: acquisition.descriptor, piece: 4_096)
        #expect(await eventually { await packets(rig).count > 20 })
        _ = await writer.value
        #expect(await rig.system.routeStatus(on: route.session)?.details.codec == "SBC")
        await rig.system.deactivate(route.session)
    }

    @Test func aStreamTheSpeakerOpensItselfIsTaken() async throws {
        let rig = try await base.makeRig(sinkCapabilities: [0xFF, 0xFF, 2, 53], audioStreamWait: .seconds(5))
        defer { Task { await rig.mock.stop() } }
        try await rig.mock.call("SetConfigureAfter", [.objectPath(rig.speaker), .uint32(600_000)])  // ConnectProfile configures nothing
        let device = try #require(await rig.system.devicesList.first)
        let route = try await rig.system.activate(deviceID: device.id)
        #expect(await rig.system.routeStatus(on: route.session)?.details.codec == nil, "no stream yet")
        try await rig.mock.call("SpeakerOpensStream", [.objectPath(rig.speaker)])
        #expect(await eventually { await rig.system.routeStatus(on: route.session)?.details.codec == "SBC" })
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let writer = writeOnOwnThread(rampFrames(44_100), to: acquisition.descriptor, piece: 4_096)
        #expect(await eventually { await packets(rig).count > 20 })
        _ = await writer.value
        await rig.system.deactivate(route.session)
    }

    /// As bumble's sink does in the HIL rig against the real bluetoothd: mid-stream the speaker
    /// closes the stream and sets it up again from its side; the new transport exists from its
    /// SET CONFIGURATION and refuses Acquire (NotAuthorized) until the speaker's OPEN, 300 ms
    /// later. The route asks again until the stream is open and the audio goes on.
    @Test func aStreamTheSpeakerSetsUpAgainItselfIsTakenOnceItIsOpen() async throws {
        let rig = try await base.makeRig(sinkCapabilities: [0xFF, 0xFF, 2, 53], audioStreamWait: .seconds(5))
        defer { Task { await rig.mock.stop() } }
        let device = try #require(await rig.system.devicesList.first)
        let route = try await rig.system.activate(deviceID: device.id)
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let writer = writeOnOwnThread(rampFrames(44_100 * 4), to: acquisition.descriptor, piece: 4_096)
        #expect(await eventually { await packets(rig).count > 10 })
        try await rig.mock.call("SpeakerSetsStreamUpAgain", [.objectPath(rig.speaker), .uint32(300)])
        let before = await packets(rig).count
        #expect(await eventually(timeout: .seconds(10)) { await packets(rig).count > before + 20 }, "the audio goes on in the new stream")
        #expect(!rig.recorder.events.contains { event in
            if case .sessionEnded = event { return true }
            return false
        }, "the session did not end")
        _ = await writer.value
        await rig.system.deactivate(route.session)
    }

    @Test func aStreamThatNeverComesFailsTheSessionWithTheReason() async throws {
        let rig = try await base.makeRig(sinkCapabilities: [0xFF, 0xFF, 2, 53], audioStreamWait: .milliseconds(300))
        defer { Task { await rig.mock.stop() } }
        try await rig.mock.call("SetConfigureAfter", [.objectPath(rig.speaker), .uint32(600_000)])
        let device = try #require(await rig.system.devicesList.first)
        let route = try await rig.system.activate(deviceID: device.id)
        _ = try await rig.system.startRealtimeSampleDelivery(on: route.session)
        let reason = await base.sessionEndReason(rig, route)
        #expect(reason?.code == .unsupported && reason?.message.contains("set up none") == true, "\(String(describing: reason))")
    }

    /// Deactivation disconnects the speaker in the background; an activation right after it
    /// waits for that disconnect, or the disconnect would end the new route.
    @Test func aSpeakerActivatedAgainAtOnceKeepsItsNewRoute() async throws {
        let rig = try await base.makeRig(sinkCapabilities: [0xFF, 0xFF, 2, 53])
        defer { Task { await rig.mock.stop() } }
        let device = try #require(await rig.system.devicesList.first)
        for _ in 0..<3 {
            let first = try await rig.system.activate(deviceID: device.id)
            await rig.system.deactivate(first.session)
            let second = try await rig.system.activate(deviceID: device.id)
            // Every signal the mock sent (the disconnect among them) has reached us.
            await rig.transport.objectManager.synchronize()
            #expect(await rig.system.activeRoutes.contains { $0.session == second.session }, "the new route stays")
            #expect(try await transportCodec(rig).codec == 0x00, "and has its stream")
            await rig.system.deactivate(second.session)
        }
    }

    /// The speaker stops taking packets: the socket's queue grows and then refuses them; the
    /// bit rate steps down (with an event), and the stream goes on when the speaker reads again.
    @Test func aCongestedLinkStepsTheBitRateDown() async throws {
        let rig = try await base.makeRig(sinkCapabilities: [0xFF, 0xFF, 2, 53])
        defer { Task { await rig.mock.stop() } }
        let device = try #require(await rig.system.devicesList.first)
        let route = try await rig.system.activate(deviceID: device.id)
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let writer = writeOnOwnThread(rampFrames(44_100 * 20), to: acquisition.descriptor, piece: 4_096, closing: false)
        #expect(await eventually { await packets(rig).count > 10 })
        let full = try #require(await rig.system.routeStatus(on: route.session)?.details.bitrate)
        try await rig.mock.call("SpeakerStallsReading", [.objectPath(rig.speaker), .bool(true)])
        let reason = await rig.recorder.first(timeout: .seconds(10)) { event -> String? in
            if case .routeChanged(let changed, let reason) = event, changed == route, reason.contains("congested") { return reason }
            return nil
        }
        #expect(reason != nil, "an event says the bit rate stepped down")
        let lower = try #require(await rig.system.routeStatus(on: route.session)?.details.bitrate)
        #expect(lower < full, "\(lower) bit/s after \(full)")
        try await rig.mock.call("SpeakerStallsReading", [.objectPath(rig.speaker), .bool(false)])
        let before = await packets(rig).count
        #expect(await eventually { await packets(rig).count > before + 20 }, "the stream goes on")
        #expect(await rig.system.audioStatistics(on: route.session)?.active == true)
        await rig.system.deactivate(route.session)
        _ = await writer.value
        close(acquisition.descriptor)
    }

    @Test func theSpeakersReportedDelayIsTheRoutesLatency() async throws {
        let rig = try await base.makeRig(sinkCapabilities: [0xFF, 0xFF, 2, 53])
        defer { Task { await rig.mock.stop() } }
        let device = try #require(await rig.system.devicesList.first)
        let route = try await rig.system.activate(deviceID: device.id)
        try await rig.mock.call("SpeakerReportsDelay", [.objectPath(rig.speaker), .uint16(2_500)])  // 250 ms
        #expect(await eventually { await rig.system.routeStatus(on: route.session)?.details.declaredLatencyMicroseconds == 250_000 })
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        #expect(acquisition.latency >= .milliseconds(250), "AcquireAudio declares \(acquisition.latency)")
        close(acquisition.descriptor)
        await rig.system.deactivate(route.session)
    }

    @Test func thePersonsPreferredCodecIsAskedOfTheSpeakerMidStream() async throws {
        guard A2DPCodec.aac.missingLibrary() == nil else {
            Issue.record("AAC needs libavcodec59")
            return
        }
        // The box prefers SBC; the speaker takes both; the person wants AAC on this one.
        let rig = try await base.makeRig(
            sinkCapabilities: [0xFF, 0xFF, 2, 53], sources: [.sbc, A2DPSourceCodec(A2DPCodec.aac)], sinkEndpoints: [Self.sbcSink, Self.aacSink],
            audioStreamWait: .seconds(5))
        defer { Task { await rig.mock.stop() } }
        let device = try #require(await rig.system.devicesList.first)
        let route = try await rig.system.activate(deviceID: device.id)
        #expect(try await transportCodec(rig).codec == 0x00)
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let writer = writeOnOwnThread(rampFrames(44_100 * 20), to: acquisition.descriptor, piece: 4_096, closing: false)
        #expect(await eventually { await packets(rig).count > 10 })
        try await rig.system.setPreferredCodecs(["aac", "sbc"], forDevice: device.id)
        #expect(await rig.system.preferredCodecs(forDevice: device.id) == ["aac", "sbc"])
        #expect(await eventually { (try? await transportCodec(rig).codec) == 0x02 })
        #expect(await eventually { await packets(rig).contains { $0.count > 12 && $0[1] & 0x80 != 0 } }, "AAC packets flow")
        #expect(await rig.system.routeStatus(on: route.session)?.details.codec == "AAC")
        #expect(await rig.system.audioStatistics(on: route.session)?.active == true, "the app's stream went on")
        // The speaker was asked through its own endpoint with ours for AAC.
        let state = try await rig.mock.call("A2DPState", [.objectPath(rig.speaker)])
        #expect(state.first?.string == "configured")
        await rig.system.deactivate(route.session)
        _ = await writer.value
        close(acquisition.descriptor)
    }

    /// A box too slow for AAC: every reading of the clock is 70 % of a delivery period later
    /// than the one before, so encoding each buffer delivery hands over measures 70 % of its
    /// audio at every rate (more than the half allowed). The route steps down to AAC's lowest rate, then asks the speaker for SBC
    /// through its own endpoint, and the app's stream goes on in SBC.
    @Test func aCodecTheBoxCannotEncodeInTimeGivesWayToSBC() async throws {
        guard A2DPCodec.aac.missingLibrary() == nil else {
            Issue.record("AAC needs libavcodec59")
            return
        }
        let rig = try await base.makeRig(
            sinkCapabilities: [0xFF, 0xFF, 2, 53], sources: [A2DPSourceCodec(A2DPCodec.aac), .sbc], sinkEndpoints: [Self.aacSink, Self.sbcSink],
            audioStreamWait: .seconds(5), clock: SlowReadingClock(step: BLESpeakerExtension.a2dpDeliveryPeriod * 7 / 10))
        defer { Task { await rig.mock.stop() } }
        let device = try #require(await rig.system.devicesList.first)
        let route = try await rig.system.activate(deviceID: device.id)
        #expect(try await transportCodec(rig).codec == 0x02)
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let writer = writeOnOwnThread(rampFrames(44_100 * 30), to: acquisition.descriptor, piece: 4_096, closing: false)
        let reason = await rig.recorder.first(timeout: .seconds(30)) { event -> String? in
            if case .routeChanged(let changed, let reason) = event, changed == route, reason.contains("at every bit rate") { return reason }
            return nil
        }
        #expect(reason == "AAC overloads the box at every bit rate: asking for SBC")
        #expect(await eventually { (try? await transportCodec(rig).codec) == 0x00 })
        #expect(await eventually { await rig.system.routeStatus(on: route.session)?.details.codec == "SBC" })
        let before = await packets(rig).count
        #expect(await eventually { await packets(rig).count > before + 20 }, "SBC packets flow")
        #expect(await rig.system.audioStatistics(on: route.session)?.active == true, "the app's stream went on")
        await rig.system.deactivate(route.session)
        _ = await writer.value
        close(acquisition.descriptor)
    }

    @Test func aCodecSwitchMidStreamIsSurvivedWithoutALeakedDescriptor() async throws {
        guard A2DPCodec.aac.missingLibrary() == nil else {
            Issue.record("AAC needs libavcodec59")
            return
        }
        @Sendable func openDescriptors() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1 }
        let rig = try await base.makeRig(
            sinkCapabilities: [0xFF, 0xFF, 2, 53], sources: [A2DPSourceCodec(A2DPCodec.aac), .sbc], sinkEndpoints: [Self.sbcSink],
            audioStreamWait: .seconds(5))
        defer { Task { await rig.mock.stop() } }
        let baseline = openDescriptors()
        let device = try #require(await rig.system.devicesList.first)
        let route = try await rig.system.activate(deviceID: device.id)
        #expect(try await transportCodec(rig).codec == 0x00)
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let writer = writeOnOwnThread(rampFrames(44_100 * 20), to: acquisition.descriptor, piece: 4_096, closing: false)
        #expect(await eventually { await packets(rig).count > 10 })
        // The speaker drops its stream and sets it up again, now offering AAC.
        try await rig.mock.call("SetSinkEndpoints", [.objectPath(rig.speaker), .array(elementSignature: "(yay)", [.structure([.byte(Self.aacSink.codec), .bytes(Self.aacSink.capabilities)])])])
        try await rig.mock.call("SpeakerDropsAudioProfile", [.objectPath(rig.speaker)])
        try await rig.mock.call("SpeakerOpensStream", [.objectPath(rig.speaker)])
        #expect(await eventually { (try? await transportCodec(rig).codec) == 0x02 })
        #expect(await eventually { await packets(rig).contains { $0.count > 12 && $0[1] & 0x80 != 0 } }, "AAC packets (marker bit) flow")
        #expect(await rig.system.routeStatus(on: route.session)?.details.codec == "AAC")
        #expect(await rig.system.audioStatistics(on: route.session)?.active == true, "the app's stream went on")
        let changed = await rig.recorder.first(timeout: .seconds(5)) { event -> String? in
            if case .routeChanged(let changed, let reason) = event, changed == route, reason.contains("SBC → AAC") { return reason }
            return nil
        }
        #expect(changed != nil, "an event says the codec changed")
        await rig.system.deactivate(route.session)
        _ = await writer.value
        close(acquisition.descriptor)
        #expect(await eventually { openDescriptors() <= baseline }, "descriptors: \(openDescriptors()) now, \(baseline) before")
    }
}

/// A 1 kHz tone, stereo S16LE.
func tone(frames: Int) -> [UInt8] {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(frames * 4)
    for frame in 0..<frames {
        let value = UInt16(bitPattern: Int16(sin(Double(frame) * 2 * .pi * 1_000 / 44_100) * 12_000))
        for _ in 0..<2 { bytes += [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)] }
    }
    return bytes
}

/// A host clock on a box too slow for its work: each reading is `step` later than the last
/// (on top of real time), so whatever is timed between two readings measures at least `step`.
final class SlowReadingClock: HostClock {
    private let base = SystemHostClock()
    private let step: Duration
    private let readings = Locked(0)

    init(step: Duration) { self.step = step }

    func now() -> Duration {
        let count = readings.withLock { count -> Int in
            count += 1
            return count
        }
        return base.now() + step * count
    }

    func sleep(until deadline: Duration) async throws {
        try await base.sleep(for: max(.zero, deadline - now()))
    }
}
