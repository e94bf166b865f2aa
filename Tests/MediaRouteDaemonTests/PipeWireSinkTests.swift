import DBus
import Foundation
import MediaDevice
import RoutingModel
import MediaRouteBusAPI
import MediaRouteClient
import MediaRouteTestSupport
import PipeWireSink
import SystemRouting
import Testing
import MediaRouteTesting

/// The left channel of stereo S16 bytes.
private func leftChannel(_ bytes: [UInt8]) -> [Double] {
    stride(from: 0, to: bytes.count - 3, by: 4).map { Double(Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8)) }
}

/// The best normalised cross-correlation of `received` against `source` at any lag up to `maximumLag`.
private func bestCorrelation(_ source: [Double], _ received: [Double], maximumLag: Int = 6_000) -> Double {
    var best = 0.0
    let window = 12_000
    guard source.count > window + 2_000 else { return 0 }
    let reference = Array(source[2_000..<(2_000 + window)])
    var lag = 0
    while lag + window <= received.count, lag <= maximumLag + 2_000 {
        var dot = 0.0, aa = 0.0, bb = 0.0
        for index in 0..<window {
            let b = received[lag + index]
            dot += reference[index] * b
            aa += reference[index] * reference[index]
            bb += b * b
        }
        if aa > 0, bb > 0 { best = max(best, dot / (aa * bb).squareRoot()) }
        lag += 1
    }
    return best
}

@Suite(.timeLimit(.minutes(2)), .enabled(if: HeadlessPipeWire.available), .serialized) struct PipeWireSinkTests {
    /// The sink against a stand-in for the daemon that records what reaches the route's socket.
    @Test func aTonePlayedToTheNodeReachesTheRouteIntact() async throws {
        let pipewire = try await HeadlessPipeWire()
        let bus = try PrivateBus()
        let server = try await DBusConnection.connect(to: .address(bus.address))
        let received = Locked<[UInt8]>([])
        let session: DBusObjectPath = "/org/mediaroute/session/test"
        await server.export(DBusObject(interfaces: [DBusInterface(Session1.interface, methods: [
            DBusMethod("AcquireAudio", inputs: [DBusArgument("encoding", "s"), DBusArgument("rate", "u"), DBusArgument("channels", "u")],
                       outputs: [DBusArgument("fd", "h"), DBusArgument("encoding", "s"), DBusArgument("rate", "u"), DBusArgument("channels", "u"), DBusArgument("latency_us", "t")]) { call in
                var ends: [Int32] = [-1, -1]
                guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0 else { throw DBusError.invalidArgs("no socket") }
                let ours = ends[0]
                Thread.detachNewThread {
                    var buffer = [UInt8](repeating: 0, count: 65_536)
                    while true {
                        let count = recv(ours, &buffer, buffer.count, 0)
                        if count <= 0 { break }
                        received.withLock { $0 += buffer.prefix(count) }
                    }
                    close(ours)
                }
                guard case .string(let encoding) = call.arguments[0], encoding == "s16le" else { throw DBusError.invalidArgs("s16le expected") }
                return Session1.AudioReply.values(
                    descriptor: DBusFileDescriptor(owning: ends[1]), format: SampleBuffer.Format(encoding: .pcmS16LE, sampleRate: 48_000, channels: 2),
                    latency: .milliseconds(50))
            },
        ])]), at: session)
        #expect(try await server.requestName(DaemonNames.busName))

        let sink = try ChildProcess(
            [RunningDaemon.binary, "pipewire-sink", "--bus", bus.address, "--session", session.rawValue, "--device", "Test Speaker", "--format", "s16le/48000/2"],
            environment: pipewire.environment)
        defer { sink.kill(); sink.wait() }
        #expect(await eventually(timeout: .seconds(10)) { await pipewire.nodes().contains("mediaroute.test_speaker") }, "the node is published")
        #expect(received.value.isEmpty, "an idle node does not take the route")

        let tone = try writeWAV(rate: 48_000, frames: 48_000) { Int16(sin(Double($0) * 2 * .pi * 440 / 48_000) * 12_000) }
        #expect(try await pipewire.play(tone, target: "mediaroute.test_speaker") == 0)
        #expect(await eventually(timeout: .seconds(10)) { received.value.count >= 48_000 * 4 })
        let source = (0..<48_000).map { sin(Double($0) * 2 * .pi * 440 / 48_000) * 12_000 }
        let correlation = bestCorrelation(source, leftChannel(received.value))
        #expect(correlation >= 0.99, "cross-correlation \(correlation)")

        sink.kill()
        #expect(sink.wait() == 0, "SIGTERM removes the node and exits cleanly")
        #expect(await eventually { !(await pipewire.nodes().contains("mediaroute.test_speaker")) })
    }

    /// The daemon with `[audio] pipewire = yes` and its simulated speaker's route, once its node is published.
    func speakerRoute(publishingIn pipewire: HeadlessPipeWire) async throws -> (RunningDaemon, SystemRouteController, RoutePicker, SystemRoute) {
        let directory = URL(fileURLWithPath: TestScratch.path("pw-conf"))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let config = directory.appendingPathComponent("mediaroute.conf").path
        try "[audio]\npipewire = yes\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try await RunningDaemon(["--config", config], environment: pipewire.environment)
        let (_, _, controller) = try await client(daemon, agent: ScriptedPairingAgent([]))
        let picker = controller.makePicker(prioritizesVideoDevices: false)
        await picker.open()
        #expect(await eventually { await picker.entries().contains { $0.displayName == "Kitchen Speaker" } })
        let route = try await picker.pick(try #require(await picker.entries().first { $0.displayName == "Kitchen Speaker" }))
        #expect(await eventually(timeout: .seconds(10)) { await pipewire.nodes().contains("mediaroute.kitchen_speaker") })
        return (daemon, controller, picker, route)
    }

    /// `[audio] pipewire = yes`: the daemon publishes a node for a route that takes samples and removes it with the route.
    @Test func theDaemonPublishesANodePerRouteAndRemovesItWithTheRoute() async throws {
        let pipewire = try await HeadlessPipeWire()
        let (daemon, controller, picker, route) = try await speakerRoute(publishingIn: pipewire)
        defer { withExtendedLifetime(daemon) {} }
        let tone = try writeWAV(rate: 48_000, frames: 24_000) { Int16(sin(Double($0) * 2 * .pi * 440 / 48_000) * 12_000) }
        #expect(try await pipewire.play(tone, target: "mediaroute.kitchen_speaker") == 0)
        #expect(await eventually(timeout: .seconds(10)) { (await route.audioStatistics()?.framesReceived ?? 0) >= 24_000 })
        #expect(await route.audioStatistics()?.format == SampleBuffer.Format(encoding: .pcmF32LE, sampleRate: 48_000, channels: 2))
        // The node tells its players the route's latency (the device's buffer and the pacing): what the route
        // declares to anyone who acquires its audio in the node's format.
        #expect(await eventually { await route.audioStatistics()?.active == false })
        let acquisition = try await route.acquireAudio(format: SampleBuffer.Format(encoding: .pcmF32LE, sampleRate: 48_000, channels: 2))
        close(acquisition.descriptor)
        let (seconds, attoseconds) = acquisition.latency.components
        let routeLatency = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        let published = await pipewire.inputPortLatencies(node: "mediaroute.kitchen_speaker")
        #expect(published.count == 2, "one per channel: \(published)")
        #expect(routeLatency > 0 && published.allSatisfy { abs(Int64($0) - routeLatency) <= 1_000 }, "published \(published) ns, the route \(routeLatency) ns")
        await controller.deactivate(route)
        #expect(await eventually(timeout: .seconds(10)) { !(await pipewire.nodes().contains("mediaroute.kitchen_speaker")) }, "the node goes with the route")
        await picker.close()
    }

    /// PipeWire restarting under a route: the node goes with it and comes back by itself, and plays again.
    @Test func aPipeWireRestartBringsTheNodeBack() async throws {
        let pipewire = try await HeadlessPipeWire()
        let (daemon, controller, picker, route) = try await speakerRoute(publishingIn: pipewire)
        defer { withExtendedLifetime(daemon) {} }
        @Sendable func sinks() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).filter { entry in
                guard Int(entry) != nil, let command = try? String(contentsOfFile: "/proc/\(entry)/cmdline", encoding: .utf8) else { return false }
                return command.contains("pipewire-sink") && command.contains("Kitchen Speaker")
                    && (try? String(contentsOfFile: "/proc/\(entry)/environ", encoding: .utf8))?.contains(pipewire.runtimeDirectory) == true
            }
        }
        let first = sinks()
        #expect(first.count == 1)

        try await pipewire.stopServers()
        // Away for longer than the first tries take: the sink keeps trying, quietly, one process at a time.
        try await Task.sleep(for: .seconds(2))
        #expect(sinks().count <= 1)
        try await pipewire.startServers()
        #expect(await eventually(timeout: .seconds(15)) { await pipewire.nodes().contains("mediaroute.kitchen_speaker") }, "the node is back")
        #expect(sinks().count == 1 && sinks() != first, "a new sink: \(first) then \(sinks())")
        let tone = try writeWAV(rate: 48_000, frames: 24_000) { Int16(sin(Double($0) * 2 * .pi * 440 / 48_000) * 12_000) }
        #expect(try await pipewire.play(tone, target: "mediaroute.kitchen_speaker") == 0)
        #expect(await eventually(timeout: .seconds(10)) { (await route.audioStatistics()?.framesReceived ?? 0) >= 24_000 }, "and plays")

        await controller.deactivate(route)
        #expect(await eventually(timeout: .seconds(10)) { sinks().isEmpty }, "the sink goes with the route")
        await picker.close()
    }

    @Test func theSinksOptionsSurviveItsCommandLineAndBadOnesAreRefused() throws {
        let options = PipeWireSink.Options(
            bus: "unix:path=/run/x", session: "/org/mediaroute/session/a", deviceName: "Den Speaker",
            format: SampleBuffer.Format(encoding: .pcmS16LE, sampleRate: 44_100, channels: 1), latency: .microseconds(73_250), retrying: true)
        #expect(try PipeWireSink.Options.parse(options.arguments).get() == options)
        for bad in [["--latency-us", "-1"], ["--latency-us", "99999999999"], ["--latency-us", "ten"], ["--format", "mp3/1/1"], ["--retrying", "--bus"]] {
            let arguments = ["--bus", "b", "--session", "/s", "--device", "D"] + bad
            #expect(throws: PipeWireSinkError.self, "\(bad)") { try PipeWireSink.Options.parse(arguments).get() }
        }
        #expect(PipeWireSink.nodeName(for: "Kitchen Speaker #2") == "mediaroute.kitchen_speaker__2")
    }

    @Test func withoutPipeWireTheSinkSaysSoInOneLine() async throws {
        let empty = TestScratch.path("no-pipewire")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        let (status, output) = try await ChildProcess.runOffPool(
            [RunningDaemon.binary, "pipewire-sink", "--bus", "unix:path=/nonexistent", "--session", "/org/mediaroute/session/x", "--device", "X"],
            environment: ["XDG_RUNTIME_DIR": empty])
        #expect(status == 69)
        #expect(output.split(separator: "\n").count == 1 && output.contains("PipeWire is not running"), "\(output)")
    }
}
