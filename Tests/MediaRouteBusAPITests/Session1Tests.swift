import DBus
import Foundation
import MediaRouteBusAPI
import RoutingModel
import Testing

@Suite struct Session1Tests {
    @Test func propertiesRoundTripThroughTheirWireForm() throws {
        var properties = Session1.Properties(id: UUID(), deviceID: "uuid:1", device: "/org/mediaroute/device/x", protocolID: "upnp")
        properties.playbackState = .playing
        properties.position = 12.5
        properties.rate = 1
        properties.duration = 180
        properties.title = "Song"
        properties.url = "http://10.0.0.2/a.mp3"
        properties.application = ":1.42"
        properties.protocolReason = "preferred"
        properties.details = RouteStatus.Details(
            protocolVersion: "A2DP", timing: .asReceived, codec: "SBC", bitrate: 327_993, declaredLatencyMicroseconds: 150_000)
        properties.audio = RealtimeAudioStatistics(format: .cdAudio, active: true, framesReceived: 10, latencyMicroseconds: 200_000, groupLeadMicroseconds: 150_000)
        properties.sinkNode = Session1.SinkNode(
            publisher: .session, format: SampleBuffer.Format(encoding: .pcmF32LE, sampleRate: 48_000, channels: 2), latencyMicroseconds: 1_080_000)
        let values = properties.values
        #expect(values["SinkNode"]?.string == "session" && values["SinkFormat"]?.string == "f32le/48000/2")
        #expect(values["AudioGroupLead"] == .uint64(150_000))
        for (name, signature) in Session1.Properties.signatures { #expect(values[name]?.signature == signature, "\(name)") }
        #expect(Session1.Properties(values: values) == properties)
        let status = properties.routeStatus(device: "Speaker", protocolName: "Bluetooth")
        #expect(status.details.codec == "SBC" && status.details.bitrate == 327_993 && status.details.timing == .asReceived)
        #expect(status.format == "s16le/44100/2" && status.measuredLatencyMicroseconds == 200_000 && status.protocolReason == "preferred")
    }

    /// What a route does not know (no codec, no bit rate) is absent, not a zero.
    @Test func unknownDetailsStayAbsentOverTheWire() throws {
        var properties = Session1.Properties(id: UUID(), deviceID: "d", device: "/d", protocolID: "p")
        properties.details = RouteStatus.Details(protocolVersion: "UPnP AV 1 (DLNA)", timing: .deviceClock)
        let mirrored = try #require(Session1.Properties(values: properties.values))
        #expect(mirrored.details == properties.details)
        #expect(mirrored.details.codec == nil && mirrored.details.bitrate == nil && mirrored.details.declaredLatencyMicroseconds == nil)
        // A route that takes no samples has no sink node: empty strings on the wire, nil here.
        #expect(properties.values["SinkNode"]?.string == "" && mirrored.sinkNode == nil)
    }

    @Test func playbackChangesAndTheEndApplyToTheMirror() throws {
        var properties = Session1.Properties(id: UUID(), deviceID: "d", device: "/d", protocolID: "p")
        properties.url = "http://h/x"
        var snapshot = PlaybackSnapshot()
        snapshot.state = .paused
        snapshot.position = 3
        snapshot.playbackSpeed = 0
        properties.apply(Session1.Properties.playbackValues(of: snapshot))
        #expect(properties.playbackState == .paused && properties.position == 3 && properties.url == "http://h/x")
        properties.apply(Session1.Properties.endedValues)
        #expect(properties.url == nil && properties.playbackState == .idle)
        var applied = PlaybackSnapshot()
        properties.apply(to: &applied)
        #expect(applied.state == .idle && applied.position == 3)
    }

    @Test func everyCallRoundTrips() throws {
        let url = try #require(URL(string: "http://10.0.0.2/a.mp3"))
        let calls: [Session1.Call] = [
            .start(url: url, mode: .player, metadata: nil),
            .start(url: url, mode: .application, metadata: PlaybackMetadata(title: "T", artist: "A", duration: 12, isLive: false)),
            .selectAudible(optionID: "en"), .selectLegible(optionID: ""), .stop, .play, .pause, .seek(position: 30), .setRate(2),
            .send([1, 2, 3]), .sendToExtension([]),
            .acquireAudio(.cdAudio), .acquireAudio(SampleBuffer.Format(encoding: .pcmF32LE, sampleRate: 48_000, channels: 1)), .releaseAudio,
            .setNowPlaying(RealtimeNowPlaying(
                metadata: PlaybackMetadata(title: "T", album: "B", duration: 3), artwork: .init(bytes: [0xFF, 0xD8, 0xFF, 0xE0]), position: 1.5)),
            .startFile(descriptor: DBusFileDescriptor(owning: dup(0)), name: "film.mp4", mode: .player, metadata: PlaybackMetadata(title: "F")),
            .acquireVideo(try VideoFrameFormat(encoding: .i420, width: 1280, height: 720, frameRateNumerator: 30)),
            .acquireVideo(try VideoFrameFormat(encoding: .nv12, width: 640, height: 360, frameRateNumerator: 30000, frameRateDenominator: 1001)),
            .releaseVideo,
        ]
        for call in calls {
            #expect(try Session1.Call(member: call.member, arguments: call.arguments) == call)
            let described = try #require(Session1.Call.methods.first { $0.member == call.member })
            #expect(described.inputs.map(\.signature) == call.arguments.map(\.signature))
        }
        #expect(Set(calls.map(\.member)) == Set(Session1.Call.methods.map(\.member)))
        // AcquireVideo: a format the video path does not take is refused with the reason.
        for arguments: [DBusValue] in [
            [.string("rgb24"), .uint32(640), .uint32(360), .uint32(30), .uint32(1)],
            [.string("i420"), .uint32(641), .uint32(360), .uint32(30), .uint32(1)],
            [.string("i420"), .uint32(640), .uint32(360), .uint32(30), .uint32(0)],
            [.string("i420"), .uint32(640), .uint32(360), .uint32(4_000_000_000), .uint32(1)],
        ] {
            #expect(throws: DBusError.self, "\(arguments)") { try Session1.Call(member: "AcquireVideo", arguments: arguments) }
        }
        // StartFile wants a descriptor first.
        #expect(throws: DBusError.self) {
            try Session1.Call(member: "StartFile", arguments: [.string("/home/a/film.mp4"), .string("film.mp4"), .string("player"), SessionMetadataCodec.encode(PlaybackMetadata())])
        }
    }

    @Test func acquireAudioArgumentsAndReply() throws {
        func name(_ arguments: [DBusValue]) -> String? {
            do { _ = try Session1.Call(member: "AcquireAudio", arguments: arguments); return nil } catch { return error.name }
        }
        #expect(name([.string("s24le"), .uint32(44_100), .uint32(2)]) == "org.mediaroute.Error.InvalidArgument")
        #expect(name([.string("s16le"), .uint32(0), .uint32(2)]) == "org.mediaroute.Error.InvalidArgument")
        #expect(name([.string("s16le"), .uint32(44_100), .uint32(0)]) == "org.mediaroute.Error.InvalidArgument")
        #expect(name([.string("s16le"), .int32(44_100), .uint32(2)]) == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(name([.string("s16le"), .uint32(44_100)]) == "org.freedesktop.DBus.Error.InvalidArgs")
        // The reply carries a descriptor; the client gets its own copy.
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        defer { close(ends[1]) }
        let reply = Session1.AudioReply.values(
            descriptor: DBusFileDescriptor(owning: ends[0]), format: .cdAudio, latency: .milliseconds(223))
        #expect(reply.map(\.signature) == Session1.Call.methods.first { $0.member == "AcquireAudio" }?.outputs.map(\.signature))
        let acquisition = try Session1.AudioReply.acquisition(from: reply)
        defer { close(acquisition.descriptor) }
        #expect(acquisition.format == .cdAudio)
        #expect(acquisition.latency == .milliseconds(223))
        #expect(acquisition.descriptor >= 0 && acquisition.descriptor != ends[0])
        #expect(throws: DBusError.self) { try Session1.AudioReply.acquisition(from: [.string("s16le")]) }
        // Audio properties round-trip, and "" means no audio acquired.
        var properties = Session1.Properties(id: UUID(), deviceID: "d", device: "/org/mediaroute/device/d", protocolID: "p")
        properties.audio = RealtimeAudioStatistics(format: .cdAudio, active: true, framesReceived: 10, framesDelivered: 12, underruns: 1, silenceFrames: 2, latencyMicroseconds: 5_000)
        #expect(Session1.Properties(values: properties.values)?.audio == properties.audio)
        properties.audio = nil
        #expect(Session1.Properties(values: properties.values)?.audio == nil)
    }

    @Test func badStartsAreTypedErrors() {
        func name(_ member: String, _ arguments: [DBusValue]) -> String? {
            do { _ = try Session1.Call(member: member, arguments: arguments); return nil } catch { return error.name }
        }
        #expect(name("Start", [.string("not a url"), .string("player")]) == "org.mediaroute.Error.InvalidArgument")
        #expect(name("Start", [.string("http://h/x"), .string("karaoke")]) == "org.mediaroute.Error.InvalidArgument")
        #expect(name("StartWithMetadata", [.string("http://h/x"), .string("player"), .properties(["title": .int32(1)])])
            == "org.mediaroute.Error.InvalidArgument")
        #expect(name("Seek", [.double(.infinity)]) == "org.mediaroute.Error.InvalidArgument")
        #expect(name("Seek", []) == DBusError.invalidArgsName)
    }

    @Test func commandsOfTheAppMapToCalls() {
        #expect(Session1.Call(.play) == .play)
        #expect(Session1.Call(.seek(to: 4)) == .seek(position: 4))
        #expect(Session1.Call(.setSpeed(0.5)) == .setRate(0.5))
        #expect(Session1.Call(.setVolume(0.5)) == nil)
    }

    @Test func signalsRoundTrip() throws {
        let signals: [Session1.Signal] = [
            .received(.route, data: [0xFF]), .received(.session, data: []), .ended(nil),
            .ended(MediaDeviceError(.connectionFailed, "the speaker went away")),
        ]
        for signal in signals {
            #expect(Session1.Signal(member: signal.member, body: signal.arguments) == signal)
        }
        #expect(Session1.Signal.ended(MediaDeviceError(.timedOut, "x")).arguments.first == .string("org.mediaroute.Error.TimedOut"))
        #expect(Session1.Signal(member: "Received", body: [.string("carrier-pigeon"), .bytes([])]) == nil)
        #expect(Session1.Signal(member: "Ended", body: [.string("")]) == nil)
    }
}
