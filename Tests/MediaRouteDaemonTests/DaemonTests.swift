import DBus
import Foundation
import MediaRouteBusAPI
import MediaRouteClient
import MediaRouteCommands
import MediaRouteTestSupport
import SystemRouting
import Testing
import RoutingModel
import MediaDevice
import MediaRouteTesting

/// `mediarouted` started as a process on a private bus.
final class RunningDaemon: Sendable {
    let bus: PrivateBus
    let process: ChildProcess

    static var binary: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("mediarouted").path
    }

    /// - Parameter simulate: publish the loopback TV and speaker (`--simulate`), as these tests expect.
    init(_ extraArguments: [String] = [], simulate: Bool = true, environment: [String: String] = [:]) async throws {
        bus = try PrivateBus()
        process = try ChildProcess(
            [Self.binary, "--bus", bus.address, "--log-level", "warning", "--push-listen", "127.0.0.1:0", "--serve-from", "/tmp"]
                + (simulate ? ["--simulate"] : []) + extraArguments,
            environment: environment)
        let probe = try await DBusConnection.connect(to: .address(bus.address))
        defer { probe.close() }
        let up = await eventually(timeout: .seconds(10)) { (try? await probe.nameOwner(of: DaemonNames.busName)) ?? nil != nil }
        guard up else { throw PrivateBusError(message: "mediarouted did not take its name") }
    }

    /// A daemon publishing only the devices of a loopback scenario (`{"devices": [...]}` JSON);
    /// the scenario file is gone once the daemon has read it.
    static func with(scenario json: String) async throws -> RunningDaemon {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("scenario-\(UUID()).json").path
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try await RunningDaemon(["--scenario", path], simulate: false)
    }

    /// Two speakers that buffer 50 ms ("Quick Speaker") and 200 ms ("Slow Speaker").
    static let quickAndSlowSpeakers = #"""
        {"devices": [
          {"name": "quick", "displayName": "Quick Speaker", "kind": "speaker", "audioLatency": 0.05},
          {"name": "slow", "displayName": "Slow Speaker", "kind": "speaker", "audioLatency": 0.2}
        ]}
        """#

    func stop() -> Int32 {
        process.kill()
        return process.wait()
    }

    deinit {
        if process.isRunning { process.kill(SIGKILL); process.wait() }
    }

    func gdbus(_ arguments: [String]) async throws -> String {
        let (status, output) = try await bus.run("/usr/bin/gdbus", ["call", "--address", bus.address, "--dest", DaemonNames.busName] + arguments)
        guard status == 0 else { throw PrivateBusError(message: "gdbus \(arguments) failed: \(output)") }
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

final class RouteEvents: SystemRouteControllerObserver {
    let events = Locked<[String]>([])
    func systemRouteController(_ controller: SystemRouteController, handle event: SystemRouteEvent) async -> Bool {
        events.withLock { $0.append("\(event.reason == .activate ? "activate" : "deactivate"):\(event.route.routeDisplayName)\(event.error.map { ":\($0.code)" } ?? "")") }
        return true
    }
}

func client(_ daemon: RunningDaemon, agent: ScriptedPairingAgent) async throws -> (DBusConnection, DaemonRoutingBackend, SystemRouteController) {
    let connection = try await DBusConnection.connect(to: .address(daemon.bus.address))
    let backend = try await DaemonRoutingBackend.connect(connection)
    let controller = await SystemRouteController(backend: backend, applicationIdentifier: "org.example.remote")
    await controller.setPairingAgent(agent)
    return (connection, backend, controller)
}

@Suite(.timeLimit(.minutes(1)), .enabled(if: PrivateBus.isAvailable), .serialized) struct DaemonTests {
    @Test func theDemoFlowThroughTheClientBackend() async throws {
        let daemon = try await RunningDaemon()
        let (_, _, controller) = try await client(daemon, agent: ScriptedPairingAgent([.code("1234")]))
        let observer = RouteEvents()
        controller.addObserver(observer)
        let picker = controller.makePicker(prioritizesVideoDevices: true)
        await picker.open()
        #expect(await eventually { await picker.entries().count == 2 })
        let entries = await picker.entries()
        #expect(entries.map(\.displayName) == ["Living Room TV", "Kitchen Speaker"])
        #expect(entries[0].protocolDisplayNames == ["Loopback"])

        let route = try await picker.pick(entries[0])
        #expect(route.routeDisplayName == "Living Room TV")
        #expect(route.protocolType.identifier == "org.mediaroute.loopback")
        #expect(await eventually { observer.events.value == ["activate:Living Room TV"] })

        let session = SystemRouteSession(url: URL(string: "http://media.example/movie.mp4")!, mode: .application)
        #expect(route.addSession(session))
        let media = try await session.start()
        let control = media.playbackControl
        #expect(control.isPlaying)
        try await Task.sleep(for: .milliseconds(300))
        #expect(control.currentPlaybackPosition > 0.2, "the position advances")
        control.isPlaying = false
        #expect(await eventually { control.snapshot.state == .paused })

        let channel = try #require(media.dataChannel)
        let replies = channel.messages()
        try await channel.send(Data("hi".utf8))
        var iterator = replies.makeAsyncIterator()
        #expect(await iterator.next().map { String(decoding: $0, as: UTF8.self) } == "ack:hi")

        let changes = route.volumeChanges()
        try await route.setVolume(0.3)
        var volumes = changes.makeAsyncIterator()
        #expect(await volumes.next()?.volume == 0.3)

        await session.stop()
        route.removeSession(session)
        await controller.deactivate(route)
        #expect(await eventually { observer.events.value == ["activate:Living Room TV", "deactivate:Living Room TV"] })
        await picker.close()
        #expect(daemon.stop() == 0, "SIGTERM shuts the daemon down cleanly")
    }

    /// Issue "a real box shows real devices": without --simulate/--scenario the daemon
    /// publishes no simulated device, through the client or on the bus's object tree.
    @Test func withoutSimulateNoSimulatedDeviceIsExported() async throws {
        let daemon = try await RunningDaemon(simulate: false)
        let (_, _, controller) = try await client(daemon, agent: ScriptedPairingAgent([]))
        let picker = controller.makePicker(prioritizesVideoDevices: true)
        await picker.open()
        try await Task.sleep(for: .milliseconds(600))
        #expect(await picker.entries().isEmpty)
        let tree = try await daemon.gdbus(["--object-path", "/org/mediaroute", "--method", "org.freedesktop.DBus.ObjectManager.GetManagedObjects"])
        #expect(!tree.contains("org.mediaroute.Device1"), "\(tree)")
        #expect(!tree.contains("Living Room TV") && !tree.contains("Kitchen Speaker"))
        await picker.close()
    }

    /// Sessions tell the truth through the daemon: the app's description, volume and mute set on
    /// the playback control, and stop() ending the session, as in-process.
    @Test func playbackControlWorksThroughTheDaemonAsInProcess() async throws {
        let daemon = try await RunningDaemon()
        let (_, _, controller) = try await client(daemon, agent: ScriptedPairingAgent([.code("1234")]))
        let picker = controller.makePicker(prioritizesVideoDevices: true)
        await picker.open()
        #expect(await eventually { await picker.entries().count == 2 })
        let route = try await picker.pick(try #require(await picker.entries().first { $0.displayName == "Living Room TV" }))
        let session = SystemRouteSession(
            url: URL(string: "http://media.example/f_1080.mp4")!, mode: .player,
            metadata: PlaybackMetadata(title: "The Film", artist: "A Director", album: "Series"))
        #expect(route.addSession(session))
        let media = try await session.start()
        #expect(media.playbackControl.metadata.title == "The Film")
        #expect(media.playbackControl.metadata.artist == "A Director")
        let sessionPath = DaemonNames.sessionPath(route.session).description
        let title = try await daemon.gdbus(["--object-path", sessionPath, "--method", "org.freedesktop.DBus.Properties.Get",
                                            DaemonNames.session, "Title"])
        #expect(title.contains("The Film"), "\(title)")
        let reason = try await daemon.gdbus(["--object-path", sessionPath, "--method", "org.freedesktop.DBus.Properties.Get",
                                             DaemonNames.session, "ProtocolReason"])
        #expect(reason.contains("the first protocol that can do what is asked"), "\(reason)")
        // Volume and mute set on the control reach the device through the daemon.
        let changes = route.volumeChanges()
        media.playbackControl.volume = 0.25
        var volumes = changes.makeAsyncIterator()
        #expect(await volumes.next()?.volume == 0.25)
        media.playbackControl.isMuted = true
        #expect(await volumes.next()?.muted == true)
        // stop() ends the session.
        media.playbackControl.stop()
        #expect(await session.waitUntilEnded() == nil)
        await controller.deactivate(route)
        await picker.close()
    }

    /// A path named on the bus is served only from the directories the daemon serves from: the
    /// household key (or anything else the daemon's user can read) is refused before any device
    /// is told of it, and so is a link in a served directory that points at it.
    /// A path named on the bus is served only from serve-from, never through a link; a person's
    /// own file elsewhere goes over as a descriptor `mediaroutectl` opened (`StartFile`).
    @Test func pathsOnTheBusComeOnlyFromTheServedDirectoriesAndAPersonsFileComesAsADescriptor() async throws {
        let served = NSTemporaryDirectory() + "mr-served-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: served, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: served) }
        let secret = NSTemporaryDirectory() + "mr-secret-\(UUID().uuidString.prefix(8)).key"
        _ = FileManager.default.createFile(atPath: secret, contents: Data("secret".utf8))
        defer { unlink(secret) }
        symlink(secret, served + "/film.mp4")
        _ = FileManager.default.createFile(atPath: served + "/real.mp4", contents: Data("film".utf8))
        let daemon = try await RunningDaemon(["--serve-from", served])
        let (connection, _, controller) = try await client(daemon, agent: ScriptedPairingAgent([.code("1234")]))
        let picker = controller.makePicker(prioritizesVideoDevices: true)
        await picker.open()
        #expect(await eventually { await picker.entries().count == 2 })
        let route = try await picker.pick(try #require(await picker.entries().first { $0.displayName == "Living Room TV" }))
        let path = DaemonNames.sessionPath(route.session)
        func start(_ call: Session1.Call) async throws {
            _ = try await connection.call(
                destination: DaemonNames.busName, path: path, interface: Session1.interface, member: call.member, call.arguments)
        }
        for named in [secret, served + "/film.mp4"] {
            do {
                try await start(.start(url: URL(fileURLWithPath: named), mode: .player, metadata: nil))
                Issue.record("\(named) was handed to the TV")
            } catch {
                #expect("\(error)".contains("serve-from") || "\(error)".contains("symbolic link"), "\(error)")
            }
        }
        try await start(.start(url: URL(fileURLWithPath: served + "/real.mp4"), mode: .player, metadata: nil))
        #expect(try await daemon.gdbus(["--object-path", path.description, "--method", "org.freedesktop.DBus.Properties.Get", DaemonNames.session, "Url"])
            .contains("real.mp4"))
        try await start(.stop)

        // What is handed over must be a readable regular file with a plain name.
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        close(ends[1])
        await #expect(throws: (any Error).self, "a pipe is not a file") {
            try await start(.startFile(descriptor: DBusFileDescriptor(owning: ends[0]), name: "x.mp4", mode: .player, metadata: PlaybackMetadata()))
        }
        await #expect(throws: (any Error).self, "a name with a slash") {
            try await start(.startFile(
                descriptor: DBusFileDescriptor(owning: open(served + "/real.mp4", O_RDONLY)), name: "../x.mp4", mode: .player, metadata: PlaybackMetadata()))
        }

        // The person's own file, outside serve-from, through mediaroutectl: opened by the CLI.
        let console = RecordingConsole()
        try await MediaRouteCtl.Play.parse(["--bus", daemon.bus.address, secret, "--to", "Living Room TV", "--pin", "1234"]).run(console: console)
        #expect(console.lines.contains { $0.hasPrefix("Playing file://") }, "\(console.lines)")
        let url = try await daemon.gdbus(["--object-path", path.description, "--method", "org.freedesktop.DBus.Properties.Get", DaemonNames.session, "Url"])
        #expect(url.contains("/run/mediaroute/handed/") && url.contains(URL(fileURLWithPath: secret).lastPathComponent), "the daemon plays the handed descriptor: \(url)")
        await picker.close()
    }

    @Test func aWrongPinComesBackAsATypedError() async throws {
        let daemon = try await RunningDaemon()
        let (_, _, controller) = try await client(daemon, agent: ScriptedPairingAgent([.code("0000")]))
        let picker = controller.makePicker()
        await picker.open()
        #expect(await eventually { await picker.entries().count == 2 })
        do {
            _ = try await controller.activate(deviceNamed: "Living Room TV")
            Issue.record("a wrong PIN activated the TV")
        } catch let error as MediaDeviceError {
            #expect(error.code == .authorizationFailed)
        }
    }

    @Test func theFlowThroughGdbus() async throws {
        let daemon = try await RunningDaemon()
        // Discovery lasts as long as the client that asked for it: a picker that stays on the bus.
        let picker = try await DBusConnection.connect(to: .address(daemon.bus.address))
        defer { picker.close() }
        _ = try await picker.call(destination: DaemonNames.busName, path: DaemonNames.root, interface: DaemonNames.manager,
                                  member: "StartDiscovery")
        let speaker = "/org/mediaroute/device/org_mediaroute_loopback_kitchen_speaker"
        var found = false
        for _ in 0..<50 where !found {
            found = (try? await daemon.gdbus(["--object-path", speaker, "--method", "org.freedesktop.DBus.Properties.Get",
                                             "org.mediaroute.Device1", "Name"])) == "(<'Kitchen Speaker'>,)"
            if !found { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(found)
        let session = try await daemon.gdbus(["--object-path", speaker, "--method", "org.mediaroute.Device1.Activate", ""])
        #expect(session.hasPrefix("(objectpath '/org/mediaroute/session/"))
        _ = try await daemon.gdbus(["--object-path", speaker, "--method", "org.mediaroute.Device1.ChangeVolume", "2"])
        let volume = try await daemon.gdbus(["--object-path", speaker, "--method", "org.freedesktop.DBus.Properties.Get",
                                             "org.mediaroute.Device1", "Volume"])
        #expect(volume == "(<0.625>,)")
        await #expect(throws: PrivateBusError.self) {
            _ = try await daemon.gdbus(["--object-path", speaker, "--method", "org.mediaroute.Device1.SetVolume", "0.5"])
        }
        _ = try await daemon.gdbus(["--object-path", speaker, "--method", "org.mediaroute.Device1.Deactivate"])
        let state = try await daemon.gdbus(["--object-path", speaker, "--method", "org.freedesktop.DBus.Properties.Get",
                                            "org.mediaroute.Device1", "State"])
        #expect(state == "(<'idle'>,)")
    }

    @Test func theFlowThroughBusctl() async throws {
        let daemon = try await RunningDaemon()
        func busctl(_ arguments: [String]) async throws -> String {
            let (status, output) = try await daemon.bus.run("/usr/bin/busctl", ["--address=\(daemon.bus.address)"] + arguments)
            guard status == 0 else { throw PrivateBusError(message: "busctl \(arguments) failed: \(output)") }
            return output.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let speaker = "/org/mediaroute/device/org_mediaroute_loopback_kitchen_speaker"
        let picker = try await DBusConnection.connect(to: .address(daemon.bus.address))
        defer { picker.close() }
        _ = try await picker.call(destination: DaemonNames.busName, path: DaemonNames.root, interface: DaemonNames.manager,
                                  member: "StartDiscovery")
        var name = ""
        for _ in 0..<50 where name.isEmpty {
            name = (try? await busctl(["get-property", DaemonNames.busName, speaker, DaemonNames.device, "Name"])) ?? ""
            if name.isEmpty { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(name == "s \"Kitchen Speaker\"")
        let introspection = try await busctl(["introspect", DaemonNames.busName, speaker])
        #expect(introspection.contains(".Activate"))
        #expect(introspection.contains(".ChangeVolume"))
        let session = try await busctl(["call", DaemonNames.busName, speaker, DaemonNames.device, "Activate", "s", ""])
        #expect(session.hasPrefix("o \"/org/mediaroute/session/"))
        _ = try await busctl(["call", "--", DaemonNames.busName, speaker, DaemonNames.device, "ChangeVolume", "i", "-2"])
        #expect(try await busctl(["get-property", DaemonNames.busName, speaker, DaemonNames.device, "Volume"]) == "d 0.375")
        #expect(try await busctl(["get-property", DaemonNames.busName, speaker, DaemonNames.device, "State"]) == "s \"active\"")
        _ = try await busctl(["call", DaemonNames.busName, speaker, DaemonNames.device, "Deactivate"])
        #expect(try await busctl(["get-property", DaemonNames.busName, speaker, DaemonNames.device, "State"]) == "s \"idle\"")
        let tree = try await busctl(["tree", DaemonNames.busName])
        #expect(tree.contains("/org/mediaroute/device/org_mediaroute_loopback_living_room_tv"))
    }

    @Test func discoveryEndsWhenItsClientLeavesTheBus() async throws {
        let daemon = try await RunningDaemon()
        let watcher = try await DBusConnection.connect(to: .address(daemon.bus.address))
        @Sendable func discovering() async -> Bool? {
            try? await watcher.call(destination: DaemonNames.busName, path: DaemonNames.root,
                                    interface: "org.freedesktop.DBus.Properties", member: "Get",
                                    [.string(DaemonNames.manager), .string("Discovering")]).first?.bool
        }
        let client = try await DBusConnection.connect(to: .address(daemon.bus.address))
        _ = try await client.call(destination: DaemonNames.busName, path: DaemonNames.root, interface: DaemonNames.manager,
                                  member: "StartDiscovery")
        #expect(await discovering() == true)
        client.close()
        #expect(await eventually { await discovering() == false })
    }

    @Test func theClientReportsTheDaemonGoingAway() async throws {
        let daemon = try await RunningDaemon()
        let (_, backend, controller) = try await client(daemon, agent: ScriptedPairingAgent([]))
        let observer = RouteEvents()
        controller.addObserver(observer)
        let picker = controller.makePicker()
        await picker.open()
        #expect(await eventually { await picker.entries().count == 2 })
        _ = try await controller.activate(deviceNamed: "Kitchen Speaker")
        #expect(daemon.stop() == 0)
        // SIGTERM: the daemon deactivates the route (a clean end), then leaves the bus.
        #expect(await eventually { observer.events.value.last == "deactivate:Kitchen Speaker" }, "\(observer.events.value)")
        #expect(await eventually { await backend.isDaemonGone })
        await #expect(throws: MediaDeviceError.self) { _ = try await controller.activate(deviceNamed: "Kitchen Speaker") }
    }

    /// The daemon's threads sleep until there is work: no timer fires while idle
    /// (libdispatch's worker-pool monitor did, once a second, before QuietExecutors).
    @Test func anIdleDaemonDoesNotWakeUp() async throws {
        // Not following udev: other tests' network namespaces come and go meanwhile, and those events are work.
        let daemon = try await RunningDaemon(["--adapters", "off"])
        let client = try await DBusConnection.connect(to: .address(daemon.bus.address))
        _ = try await client.call(destination: DaemonNames.busName, path: DaemonNames.root, interface: DaemonNames.manager,
                                  member: "StartDiscovery")
        client.close()
        /// Context switches so far of each of the daemon's threads, by thread id.
        func contextSwitches() throws -> [String: Int] {
            var counts: [String: Int] = [:]
            for task in try FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.process.pid)/task") {
                guard let status = try? String(contentsOfFile: "/proc/\(daemon.process.pid)/task/\(task)/status", encoding: .utf8) else { continue }
                counts[task] = status.split(separator: "\n").filter { $0.contains("ctxt_switches") }
                    .compactMap { $0.split(separator: ":").last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } }.reduce(0, +)
            }
            return counts
        }
        // Let the client's departure (discovery stops) settle first.
        try await Task.sleep(for: .seconds(1))
        let before = try contextSwitches()
        try await Task.sleep(for: .seconds(3))
        let after = try contextSwitches()
        // A thread that started or ended in between (libdispatch retires idle threads after 5 s) is not idling.
        let woken = after.filter { before[$0.key] != nil && $0.value != before[$0.key] }
        #expect(woken.values.reduce(0, +) - woken.keys.compactMap { before[$0] }.reduce(0, +) <= 1, "wake-ups in 3 s of idling, by thread: \(before) → \(after)")
    }

    @Test func noDaemonIsAClearError() async throws {
        let bus = try PrivateBus()
        let connection = try await DBusConnection.connect(to: .address(bus.address))
        do {
            _ = try await DaemonRoutingBackend.connect(connection)
            Issue.record("connected to a daemon that does not run")
        } catch let error as MediaDeviceError {
            #expect(error.code == .connectionFailed)
            #expect(error.message.contains("not running"))
        }
    }
}

@Suite(.timeLimit(.minutes(1)), .enabled(if: PrivateBus.isAvailable)) struct ControlCommandWithDaemonTests {
    @Test func mediaroutectlTalksToTheDaemonAndItsRoutesOutliveTheCommand() async throws {
        let daemon = try await RunningDaemon()
        let play = RecordingConsole()
        try await MediaRouteCtl.Play.parse([
            "http://m/x.mp4", "--to", "Living Room TV", "--pin", "1234", "--seconds", "0.5", "--keep", "--bus", daemon.bus.address,
        ]).run(console: play)
        #expect(play.lines.contains("Playing http://m/x.mp4 on Living Room TV"))
        let status = RecordingConsole()
        try await MediaRouteCtl.Status.parse(["--bus", daemon.bus.address]).run(console: status)
        #expect(status.lines.contains("Connected to mediarouted."))
        #expect(status.lines.contains("Active routes: Living Room TV"))
        let stop = RecordingConsole()
        try await MediaRouteCtl.Stop.parse(["--to", "Living Room TV", "--bus", daemon.bus.address]).run(console: stop)
        let after = RecordingConsole()
        try await MediaRouteCtl.Status.parse(["--bus", daemon.bus.address]).run(console: after)
        #expect(after.lines.contains("No active routes."))
    }

    /// `mediaroutectl suggest` through the daemon, and picks remembered in its state directory.
    @Test func suggestionsAreLearnedByTheDaemonAndKeptInItsStateDirectory() async throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("mr-state-\(UUID())").path
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: state) }
        let daemon = try await RunningDaemon(["--state-dir", state])
        _ = try await daemon.gdbus(["--object-path", "/org/mediaroute", "--method", "org.mediaroute.Manager1.StartDiscovery"])
        @Sendable func suggest(_ arguments: [String]) async throws -> String {
            let console = RecordingConsole()
            try await MediaRouteCtl.Suggest.parse(["--bus", daemon.bus.address, "--json"] + arguments).run(console: console)
            return console.lines.joined()
        }
        #expect(await eventually { (try? await suggest(["--video", "--long-form"])) == #"{"suggestion": "external", "device": "Living Room TV"}"# })
        #expect(try await suggest([]) == #"{"suggestion": "local"}"#)
        // Music in the morning goes to the speaker: remembered, then suggested.
        let speaker = "org.mediaroute.loopback/kitchen-speaker"
        for _ in 0..<2 {
            _ = try await daemon.gdbus(["--object-path", "/org/mediaroute", "--method", "org.mediaroute.Manager1.RecordRouteChoice",
                                        "org.example.music", "false", "false", speaker])
        }
        #expect(try await suggest(["--app", "org.example.music"]) == #"{"suggestion": "external", "device": "Kitchen Speaker"}"#)
        let saved = try String(contentsOfFile: state + "/route-suggestions.json", encoding: .utf8)
        #expect(saved.contains("org.example.music") && saved.contains("kitchen-speaker"))
    }

    /// Discovery failures are visible: on Manager1.DiscoveryFailures, and as one CLI notice line per protocol.
    @Test func discoveryFailuresReachTheBusAndTheCLI() async throws {
        let scenario = FileManager.default.temporaryDirectory.appendingPathComponent("failing-\(UUID()).json").path
        try #"{"devices": [], "discoveryFailure": "Bluetooth adapter is off"}"#.write(toFile: scenario, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: scenario) }
        let daemon = try await RunningDaemon(["--scenario", scenario], simulate: false)
        let console = RecordingConsole()
        try await MediaRouteCtl.Devices.parse(["--bus", daemon.bus.address, "--seconds", "1"]).run(console: console)
        #expect(console.notices.filter { $0.contains("discovery failed: Bluetooth adapter is off") }.count == 1, "\(console.notices)")
        _ = try await daemon.gdbus(["--object-path", "/org/mediaroute", "--method", "org.mediaroute.Manager1.StartDiscovery"])
        #expect(await eventually {
            let failures = (try? await daemon.gdbus(["--object-path", "/org/mediaroute", "--method", "org.freedesktop.DBus.Properties.Get",
                                                     "org.mediaroute.Manager1", "DiscoveryFailures"])) ?? ""
            return failures.contains("org.mediaroute.loopback") && failures.contains("Bluetooth adapter is off")
        })
    }

    @Test func withoutADaemonItFallsBackInProcessAndSaysSo() async throws {
        let bus = try PrivateBus()
        let console = RecordingConsole()
        try await MediaRouteCtl.Status.parse(["--bus", bus.address, "--simulate"]).run(console: console)
        #expect(console.notices.first?.contains("mediarouted is not reachable") == true)
        #expect(console.notices.first?.contains("running in-process instead") == true)
        #expect(console.lines.contains("Routing system in this process."))
    }
}
