import DBus
import MediaRouteClient
import SystemRouting
import Foundation
import MediaRouteBusAPI
import MediaRouteTestSupport
import MediaRouteTesting
import PipeWireSink
import RoutingModel
import Testing

/// A stand-in for the daemon's `Session1.AcquireVideo`: each acquisition's format, and the
/// pictures read from its socket (their pattern numbers), until the writer closes it.
final class VideoRouteStandIn: Sendable {
    struct Acquisition: Sendable {
        var format: VideoFrameFormat
        var pictures: [[UInt8]] = []
        var closed = false
    }

    let acquisitions = Locked<[Acquisition]>([])
    let session: DBusObjectPath = "/org/mediaroute/session/video"

    init(server: DBusConnection) async throws {
        let acquisitions = self.acquisitions
        await server.export(DBusObject(interfaces: [DBusInterface(Session1.interface, methods: [
            DBusMethod(
                "AcquireVideo",
                inputs: [DBusArgument("encoding", "s"), DBusArgument("width", "u"), DBusArgument("height", "u"), DBusArgument("rate_num", "u"), DBusArgument("rate_den", "u")],
                outputs: [DBusArgument("fd", "h"), DBusArgument("latency_us", "t")]
            ) { call in
                guard case .acquireVideo(let format) = try Session1.Call(member: "AcquireVideo", arguments: call.arguments) else { throw DBusError.invalidArgs("AcquireVideo") }
                var ends: [Int32] = [-1, -1]
                guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0 else { throw DBusError.invalidArgs("no socket") }
                let index = acquisitions.withLock { list in
                    list.append(Acquisition(format: format))
                    return list.count - 1
                }
                let ours = ends[0]
                Thread.detachNewThread {
                    var picture = [UInt8](repeating: 0, count: format.frameBytes)
                    var filled = 0
                    while true {
                        let count = picture.withUnsafeMutableBytes { recv(ours, $0.baseAddress! + filled, format.frameBytes - filled, 0) }
                        if count <= 0 { break }
                        filled += count
                        if filled == format.frameBytes {
                            acquisitions.withLock { $0[index].pictures.append(picture) }
                            filled = 0
                        }
                    }
                    close(ours)
                    acquisitions.withLock { $0[index].closed = true }
                }
                return Session1.VideoReply.values(descriptor: DBusFileDescriptor(owning: ends[1]), latency: .milliseconds(1500))
            },
        ])]), at: session)
    }

    /// The pattern numbers of acquisition `index`'s pictures.
    func numbers(_ index: Int = 0) -> [Int?] {
        acquisitions.withLock { list in
            guard index < list.count else { return [] }
            let format = list[index].format
            return list[index].pictures.map { VideoTestPattern.number(inGray: Array($0.prefix(format.width * format.height)), width: format.width, height: format.height) }
        }
    }
}

/// A headless PipeWire, a private bus with the stand-in route on it, and the node's process for
/// one device, once its node is published; the process ends with the value.
final class VideoNodeRig: Sendable {
    let pipewire: HeadlessPipeWire
    let bus: PrivateBus
    let server: DBusConnection
    let route: VideoRouteStandIn
    let sink: ChildProcess
    let nodeName: String

    init(device: String) async throws {
        pipewire = try await HeadlessPipeWire()
        bus = try PrivateBus()
        server = try await DBusConnection.connect(to: .address(bus.address))
        route = try await VideoRouteStandIn(server: server)
        #expect(try await server.requestName(DaemonNames.busName))
        // The node's output in the PipeWire's directory (`node.log`, said when a test fails).
        let log = open(pipewire.runtimeDirectory + "/node.log", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        defer { close(log) }
        sink = try ChildProcess(
            [RunningDaemon.binary, "pipewire-video-sink", "--bus", bus.address, "--session", route.session.rawValue, "--device", device],
            outputFD: log, environment: pipewire.environment)
        nodeName = PipeWireVideoSink.nodeName(for: device)
        let pipewire = self.pipewire, nodeName = self.nodeName
        #expect(await eventually(timeout: .seconds(10)) { await pipewire.nodes().contains(nodeName) }, "the node is published")
    }

    var nodeLog: String { (try? String(contentsOfFile: pipewire.runtimeDirectory + "/node.log", encoding: .utf8)) ?? "" }

    deinit {
        sink.kill()
        sink.wait()
    }
}

@Suite(.timeLimit(.minutes(2)), .enabled(if: HeadlessPipeWire.videoAvailable), .serialized) struct PipeWireVideoSinkTests {
    /// A pipeline sending a numbered YUV4MPEG2 file to the node: the route gets the pictures in
    /// order, in the format PipeWire settled, and is released when the pipeline ends.
    @Test func picturesSentToTheNodeReachTheRouteInOrder() async throws {
        let rig = try await VideoNodeRig(device: "Lounge TV")
        let (pipewire, route, sink) = (rig.pipewire, rig.route, rig.sink)
        try await Task.sleep(for: .milliseconds(300))
        #expect(route.acquisitions.value.isEmpty, "an idle node does not take the route")

        let format = try VideoFrameFormat(encoding: .i420, width: 320, height: 180, frameRateNumerator: 25)
        let count = 75
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mediaroute-pwv-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("pattern.y4m").path
        try Data(VideoTestPattern.yuv4mpeg2(0..<count, format: format)).write(to: URL(fileURLWithPath: file))
        let pipeline = try pipewire.gstreamer(["filesrc", "location=\(file)", "!", "y4mdec", "!", "pipewiresink", "target-object=mediaroute.lounge_tv.video"])
        defer { pipeline.kill(); pipeline.wait() }
        #expect(await eventually(timeout: .seconds(15)) { route.numbers().last == count - 1 }, "pictures: \(route.numbers().count); node: \(rig.nodeLog)")
        let acquisition = try #require(route.acquisitions.value.first)
        #expect(acquisition.format == format, "the route's format is the one PipeWire settled: \(acquisition.format)")
        let numbers = route.numbers().compactMap { $0 }
        #expect(numbers.count == route.numbers().count, "every picture reads as the pattern")
        #expect(numbers == numbers.sorted() && Set(numbers).count == numbers.count, "in order, each once: \(numbers.prefix(30))")
        // The first picture waits for the route's acquisition (the newest one does: a picture or two may
        // be replaced by a newer one meanwhile); after that, nearly all.
        #expect((numbers.first ?? count) <= 3, "from the start: \(numbers.prefix(5))")
        #expect(Set(numbers).count >= count * 95 / 100, "\(Set(numbers).count) of \(count); missing \(Set(0..<count).subtracting(numbers).sorted())")
        // The pipeline ends: the node pauses and the route's video is released (its socket closed).
        #expect(pipeline.wait() == 0)
        #expect(await eventually(timeout: .seconds(10)) { route.acquisitions.value.first?.closed == true }, "released when the producer went")
        #expect(route.acquisitions.value.count == 1)

        sink.kill()
        #expect(sink.wait() == 0, "SIGTERM removes the node and exits cleanly")
        #expect(await eventually { !(await pipewire.nodes().contains("mediaroute.lounge_tv.video")) })
    }

    /// One producer, then another in another size (a window resized, a camera switched): the
    /// route's video is released with the first and acquired again in the second's format.
    @Test func aNewFormatReleasesTheRouteAndAcquiresItAgainInThatFormat() async throws {
        let rig = try await VideoNodeRig(device: "Loft TV")
        let (pipewire, route) = (rig.pipewire, rig.route)
        for (index, size) in [(320, 180), (640, 360)].enumerated() {
            let pipeline = try pipewire.gstreamer([
                "videotestsrc", "!", "video/x-raw,format=NV12,width=\(size.0),height=\(size.1),framerate=30/1", "!",
                "pipewiresink", "target-object=mediaroute.loft_tv.video",
            ])
            let flowed = await eventually(timeout: .seconds(20)) { route.acquisitions.value.count > index && route.acquisitions.value[index].pictures.count >= 10 }
            #expect(flowed, "producer \(index + 1): node: \(rig.nodeLog)")
            pipeline.kill()
            pipeline.wait()
            #expect(await eventually(timeout: .seconds(10)) { route.acquisitions.value.count > index && route.acquisitions.value[index].closed }, "released when producer \(index + 1) went")
        }
        let formats = route.acquisitions.value.map(\.format)
        #expect(formats == [
            try VideoFrameFormat(encoding: .nv12, width: 320, height: 180, frameRateNumerator: 30),
            try VideoFrameFormat(encoding: .nv12, width: 640, height: 360, frameRateNumerator: 30),
        ], "NV12 as it came, each producer's size: \(formats)")
    }

    /// 32-bit RGB of an odd size (a window cast): the route gets the even part, in I420, in BT.601.
    @Test func rgbOfAnOddSizeIsConvertedToTheEvenPartInI420() async throws {
        let rig = try await VideoNodeRig(device: "Den TV")
        let (pipewire, route) = (rig.pipewire, rig.route)
        // Pure red (videotestsrc's foreground colour is ARGB).
        let pipeline = try pipewire.gstreamer([
            "videotestsrc", "pattern=solid-color", "foreground-color=0xffff0000", "!",
            "video/x-raw,format=BGRx,width=321,height=181,framerate=20/1", "!", "pipewiresink", "target-object=mediaroute.den_tv.video",
        ])
        defer { pipeline.kill(); pipeline.wait() }
        // A pipeline with no end: killed once the route has what it needs.
        #expect(await eventually(timeout: .seconds(20)) { (route.acquisitions.value.first?.pictures.count ?? 0) >= 20 }, "node: \(rig.nodeLog)")
        let acquisition = try #require(route.acquisitions.value.first)
        #expect(acquisition.format == (try VideoFrameFormat(encoding: .i420, width: 320, height: 180, frameRateNumerator: 20)))
        let picture = try #require(acquisition.pictures.last)
        let luma = 320 * 180
        #expect(abs(Int(picture[luma / 2]) - 81) <= 2 && abs(Int(picture[luma + 100]) - 90) <= 2 && abs(Int(picture[luma + luma / 4 + 100]) - 240) <= 2,
                "red is Y 81 U 90 V 240: \(picture[luma / 2]) \(picture[luma + 100]) \(picture[luma + luma / 4 + 100])")
    }

    /// `[audio] pipewire = yes`: a route that shows video gets a video node beside nothing else
    /// (a TV takes no samples); a producer linked to it plays on the route; the node goes with the route.
    @Test func theDaemonPublishesAVideoNodePerVideoRouteAndRemovesItWithTheRoute() async throws {
        let pipewire = try await HeadlessPipeWire()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mediaroute-pwv-conf-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("mediaroute.conf").path
        try "[audio]\npipewire = yes\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try await RunningDaemon(["--config", config], environment: pipewire.environment)
        defer { withExtendedLifetime(daemon) {} }
        let (connection, _, controller) = try await client(daemon, agent: ScriptedPairingAgent([.code("1234")]))
        let picker = controller.makePicker(prioritizesVideoDevices: true)
        await picker.open()
        #expect(await eventually { await picker.entries().contains { $0.displayName == "Living Room TV" } })
        let route = try await picker.pick(try #require(await picker.entries().first { $0.displayName == "Living Room TV" }))
        #expect(await eventually(timeout: .seconds(10)) { await pipewire.nodes().contains("mediaroute.living_room_tv.video") }, "the video node is published")
        #expect(!(await pipewire.nodes().contains("\"mediaroute.living_room_tv\"")), "no audio node for a route that takes no samples")
        let values = try await connection.call(
            destination: DaemonNames.busName, path: DaemonNames.sessionPath(route.session), interface: "org.freedesktop.DBus.Properties",
            member: "GetAll", [.string(Session1.interface)])
        let properties = try #require(Session1.Properties(values: values.first?.dictionary ?? [:]))
        #expect(properties.videoSinkNode == .daemon && properties.sinkNode == nil)

        let pipeline = try pipewire.gstreamer([
            "videotestsrc", "num-buffers=50", "!", "video/x-raw,format=I420,width=640,height=360,framerate=25/1", "!",
            "pipewiresink", "target-object=mediaroute.living_room_tv.video",
        ])
        defer { pipeline.kill(); pipeline.wait() }
        let flowed = await eventually(timeout: .seconds(15)) { (await route.status()?.video?.framesReceived ?? 0) >= 40 }
        let status = await route.status()?.video
        #expect(flowed, "\(String(describing: status))")
        let video = try #require(await route.status()?.video)
        #expect(video.format == (try VideoFrameFormat(encoding: .i420, width: 640, height: 360, frameRateNumerator: 25)))
        #expect(pipeline.wait() == 0)
        #expect(await eventually(timeout: .seconds(10)) { await route.status()?.video?.active == false }, "released when the producer ends")

        await controller.deactivate(route)
        #expect(await eventually(timeout: .seconds(10)) { !(await pipewire.nodes().contains("mediaroute.living_room_tv.video")) }, "the node goes with the route")
        await picker.close()
    }

    /// `mediaroutectl mirror --source pipewire:NODE`: a camera-like node (GStreamer's pipewiresink
    /// providing a `Video/Source`) on the simulated TV through the daemon, until Ctrl-C.
    @Test func mirrorShowsAPipeWireNodeUntilInterrupted() async throws {
        let pipewire = try await HeadlessPipeWire()
        let daemon = try await RunningDaemon(["--config", "/dev/null"], environment: pipewire.environment)
        defer { withExtendedLifetime(daemon) {} }
        let camera = try pipewire.gstreamer([
            "videotestsrc", "is-live=true", "!", "video/x-raw,format=I420,width=320,height=180,framerate=25/1", "!",
            "pipewiresink", "mode=provide", "stream-properties=props,node.name=test-camera,media.class=Video/Source",
        ])
        defer { camera.kill(); camera.wait() }
        #expect(await eventually(timeout: .seconds(10)) { await pipewire.nodes().contains("test-camera") })
        let output = pipewire.runtimeDirectory + "/mirror.log"
        let log = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        let mirror = try ChildProcess(
            [URL(fileURLWithPath: RunningDaemon.binary).deletingLastPathComponent().appendingPathComponent("mediaroutectl").path,
             "mirror", "--bus", daemon.bus.address, "--to", "Living Room TV", "--pin", "1234", "--source", "pipewire:test-camera"],
            outputFD: log, environment: pipewire.environment)
        close(log)
        defer { mirror.kill(SIGKILL); mirror.wait() }
        let (_, _, controller) = try await client(daemon, agent: ScriptedPairingAgent([]))
        @Sendable func received() async -> UInt64 {
            guard let route = controller.routes.named("Living Room TV") else { return 0 }
            return await route.status()?.video?.framesReceived ?? 0
        }
        let text = { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }
        #expect(await eventually(timeout: .seconds(20)) { await received() >= 40 }, "mirror: \(text())")
        mirror.kill(SIGINT)
        #expect(mirror.wait() == 0, "\(text())")
        #expect(text().contains("Showing test-camera (i420 320x180@25) on Living Room TV"), "\(text())")
        #expect(text().contains("pictures received") && text().contains("Stopped."), "\(text())")
        #expect(await eventually(timeout: .seconds(10)) { await controller.routes.named("Living Room TV") == nil }, "the route ends with the mirror")
    }

    /// A node that is not there (or sends nothing): the mirror says so and fails, the route ends.
    @Test func mirrorFromANodeThatSendsNothingFailsWithTheReason() async throws {
        let pipewire = try await HeadlessPipeWire()
        let daemon = try await RunningDaemon(["--config", "/dev/null"], environment: pipewire.environment)
        defer { withExtendedLifetime(daemon) {} }
        let (status, output) = try await ChildProcess.runOffPool(
            [URL(fileURLWithPath: RunningDaemon.binary).deletingLastPathComponent().appendingPathComponent("mediaroutectl").path,
             "mirror", "--bus", daemon.bus.address, "--to", "Living Room TV", "--pin", "1234", "--source", "pipewire:no-such-camera"],
            environment: pipewire.environment)
        #expect(status != 0)
        #expect(output.contains("no video from no-such-camera: PipeWire has no such video source"), "\(output)")
    }

    @Test func theVideoSinksOptionsSurviveItsCommandLineAndBadOnesAreRefused() throws {
        let options = PipeWireVideoSink.Options(bus: "unix:path=/run/x", session: "/org/mediaroute/session/a", deviceName: "Den TV", retrying: true)
        #expect(try PipeWireVideoSink.Options.parse(options.arguments).get() == options)
        for bad in [["--format", "i420"], ["--retrying", "--bus"], []] {
            let arguments = (bad.isEmpty ? ["--bus", "b"] : ["--bus", "b", "--session", "/s", "--device", "D"]) + bad
            #expect(throws: PipeWireSinkError.self, "\(bad)") { try PipeWireVideoSink.Options.parse(arguments).get() }
        }
        #expect(PipeWireVideoSink.nodeName(for: "Den TV #2") == "mediaroute.den_tv__2.video")
    }
}
