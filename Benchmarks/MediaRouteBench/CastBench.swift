import CastExtension
import DBus
import Foundation
import LANTransport
import MediaDevice
import RoutingModel
import MediaRouteTestSupport
import RouteSystem
import MediaRouteTesting

/// Issue 22's figures, against one test Cast receiver announced over mDNS in a network
/// namespace, in one run: MediaRoute next to pychromecast (Debian's python3-pychromecast).
extension Bench {
    static func cast(arguments: [String]) async throws {
        guard CastReceiverPeer.available, NamespaceLab.isAvailable else { return }
        let runs = Int(arguments.first ?? "") ?? 7
        let daemonBinary = arguments.dropFirst().first ?? ".build-release/release/mediarouted"
        let ctlBinary = arguments.dropFirst(2).first ?? ".build-release/release/mediaroutectl"
        let lab = try NamespaceLab()
        let room = lab.rooms[0]
        let peer = try CastReceiverPeer(lab: lab, room: room, name: "Bench TV")
        let url = "http://\(room.hostAddress):9/film.mp4"
        let clock = ContinuousClock()
        try await Task.sleep(for: .seconds(1))

        func routeSystem() async throws -> RouteSystem {
            let system = RouteSystem()
            let lan = LANTransport(configuration: .init(interfaces: [room.outside]))
            let transport = DNSSDServiceTransport(lan: lan, serviceTypes: [CastExtension.serviceType], tls: true)
            try await system.load { manager in CastExtension(transport: transport, routingManager: manager) }
            return system
        }

        func playing(on system: RouteSystem) async throws -> (RouteSystem, any InterfaceControllable, MediaOutputSession) {
            await system.beginDiscovery(client: "bench")
            var device = await system.devicesList.first { $0.displayName == "Bench TV" }
            while device == nil {
                try await Task.sleep(for: .milliseconds(2))
                device = await system.devicesList.first { $0.displayName == "Bench TV" }
            }
            let route = try await system.activate(deviceID: device!.id)
            let control = try await system.startSession(on: route.session, identifier: nil, url: URL(string: url)!)
            for await snapshot in control.changes() where snapshot.state == .playing { break }
            return (system, control, route.session)
        }

        // 1. Discovery start → the receiver reports PLAYING (cold: everything new each run).
        var mediaRoutePlay: [Double] = []
        for _ in 0..<runs {
            let system = try await routeSystem()
            let start = clock.now
            let (_, _, session) = try await playing(on: system)
            mediaRoutePlay.append(milliseconds(clock.now - start))
            await system.deactivate(session)
            await system.shutdown()
            // A responder multicasts a record at most once a second (RFC 6762 §6): runs closer
            // than that would wait for the next query, for both senders.
            try await Task.sleep(for: .seconds(2))
        }
        var pychromecastPlay: [Double] = []
        for _ in 0..<runs {
            let (status, output) = try await ChildProcess.runOffPool(["/usr/bin/python3", "Benchmarks/cast_pychromecast.py", "play", "Bench TV", url])
            if status == 0, let line = output.split(separator: "\n").first(where: { $0.hasPrefix("playing ") }), let ms = Double(line.dropFirst(8)) {
                pychromecastPlay.append(ms)
            } else {
                print("pychromecast play failed: \(output.suffix(300))")
            }
            try await Task.sleep(for: .seconds(2))
        }

        // 2. The receiver resets the connection → the route plays again (same app, status read back).
        var mediaRouteResume: [Double] = []
        let (system, control, session) = try await playing(on: try await routeSystem())
        try await Task.sleep(for: .seconds(6))
        for _ in 0..<runs {
            let start = clock.now
            try await peer.command("reset")
            for await snapshot in control.changes() where snapshot.state == .buffering { break }
            for await snapshot in control.changes() where snapshot.state == .playing { break }
            mediaRouteResume.append(milliseconds(clock.now - start))
            // The channel is up long enough for its next loss to be retried at once.
            try await Task.sleep(for: .seconds(6))
        }
        await system.deactivate(session)
        await system.shutdown()
        var pychromecastResume: [Double] = []
        for _ in 0..<runs {
            let (status, output) = try await ChildProcess.runOffPool([
                "/usr/bin/python3", "Benchmarks/cast_pychromecast.py", "resume", "Bench TV", url, peer.address, String(peer.controlPort),
            ])
            if status == 0, let line = output.split(separator: "\n").first(where: { $0.hasPrefix("resumed ") }), let ms = Double(line.dropFirst(8)) {
                pychromecastResume.append(ms)
            } else {
                print("pychromecast resume failed: \(output.suffix(300))")
            }
        }

        print("| measure (median of \(runs); all runs, ms) | MediaRoute | pychromecast 9.4 | ratio |")
        print("|---|---|---|---|")
        print("| discovery start → PLAYING | \(format(median(mediaRoutePlay), 1)) ms (\(list(mediaRoutePlay))) | \(format(median(pychromecastPlay), 1)) ms (\(list(pychromecastPlay))) | \(format(median(pychromecastPlay) / median(mediaRoutePlay), 1))× faster |")
        print("| connection reset → playing again | \(format(median(mediaRouteResume), 1)) ms (\(list(mediaRouteResume))) | \(format(median(pychromecastResume), 1)) ms (\(list(pychromecastResume))) | \(format(median(pychromecastResume) / median(mediaRouteResume), 1))× faster |")

        // 3. The daemon's resident memory, idle and then with one Cast route playing.
        guard FileManager.default.isExecutableFile(atPath: daemonBinary), FileManager.default.isExecutableFile(atPath: ctlBinary) else {
            print("cast: daemon memory needs \(daemonBinary) and \(ctlBinary) (make release)")
            return
        }
        evictFromPageCache(daemonBinary)  // as started from flash (see `daemon`)
        let bus = try PrivateBus()
        let state = NSTemporaryDirectory() + "mr-cast-bench-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let daemon = try ChildProcess([
            daemonBinary, "--bus", bus.address, "--lan", "on", "--lan-interfaces", room.outside, "--adapters", "off", "--push-listen", "off",
            "--config", "/dev/null", "--log-level", "error", "--state-dir", state,
        ])
        try await Task.sleep(for: .seconds(3))
        let idle = status(daemon.pid, "VmRSS") ?? 0
        let idleSplit = (status(daemon.pid, "RssAnon") ?? 0, status(daemon.pid, "RssFile") ?? 0)
        let (played, output) = try await ChildProcess.runOffPool([ctlBinary, "play", "--bus", bus.address, url, "--to", "Bench TV"])
        try await Task.sleep(for: .seconds(3))
        let active = status(daemon.pid, "VmRSS") ?? 0
        let activeSplit = (status(daemon.pid, "RssAnon") ?? 0, status(daemon.pid, "RssFile") ?? 0)
        let threads = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.pid)/task").count
        let before = contextSwitches(daemon.pid)
        try await Task.sleep(for: .seconds(10))
        let wakeups = Self.wakeups(from: before, to: contextSwitches(daemon.pid)) / 10
        print("")
        print("| mediarouted (release) | resident memory (anonymous + file-backed) | wake-ups |")
        print("|---|---|---|")
        print("| idle, LAN on | \(format(idle / 1024, 1)) MB (\(format(idleSplit.0 / 1024, 1)) + \(format(idleSplit.1 / 1024, 1))) | |")
        print("| one Cast route playing (`mediaroutectl play` \(played == 0 ? "ok" : "failed: \(output.suffix(200))"); \(threads) threads) | \(format(active / 1024, 1)) MB (\(format(activeSplit.0 / 1024, 1)) + \(format(activeSplit.1 / 1024, 1))) | \(format(wakeups, 2)) /s |")
        let perThread = contextSwitches(daemon.pid)
        try await Task.sleep(for: .seconds(5))
        let later = contextSwitches(daemon.pid)
        for (task, count) in later.sorted(by: { $0.key < $1.key }) {
            let name = (try? String(contentsOfFile: "/proc/\(daemon.pid)/task/\(task)/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
            print("thread \(task) \(name): \(format((count - (perThread[task] ?? 0)) / 5, 2)) /s")
        }
        daemon.kill()
        daemon.wait()
        bus.stop()
        try? FileManager.default.removeItem(atPath: state)
    }
}
