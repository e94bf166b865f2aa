import DBus
import Foundation
import MediaDevice
import RoutingModel
import MediaRouteClient
import MediaRouteTestSupport
import SystemRouting
import MediaRouteTesting

/// `mediaroute-bench pipewire PATH/mediarouted [SECONDS]`: the box's own audio through
/// PipeWire to a route, for SECONDS (default 60).
///
/// A headless PipeWire (pipewire and wireplumber, no sound card: its dummy driver clocks the
/// graph), the daemon on a private bus with `[audio] pipewire = yes` and its simulated
/// Kitchen Speaker activated, and `pw-play` playing a 48 kHz stereo S16 file to the node
/// `mediaroute.kitchen_speaker`. CPU is each process's user and system time over the play
/// (from /proc), as a share of one core: the sink (`mediarouted pipewire-sink`: the graph's
/// quantum into the route's socket) and the daemon (pacing, and the loopback speaker taking
/// the buffers) are MediaRoute's cost; PipeWire's server and `pw-play` are shown beside it.
extension Bench {
    static func pipewire(binary: String, seconds: Int) async throws {
        guard HeadlessPipeWire.available else { return }
        let pipewire = try await HeadlessPipeWire()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mediaroute-bench-pw-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("mediaroute.conf").path
        try "[audio]\npipewire = yes\n".write(toFile: config, atomically: true, encoding: .utf8)
        let bus = try PrivateBus()
        let daemon = try ChildProcess(
            [binary, "--bus", bus.address, "--log-level", "error", "--simulate", "--config", config], environment: pipewire.environment)
        defer {
            daemon.kill()
            daemon.wait()
        }
        let connection = try await DBusConnection.connect(to: .address(bus.address))
        guard await eventually(timeout: .seconds(10), { (try? await connection.nameOwner(of: "org.mediaroute")) ?? nil != nil }) else {
            print("pipewire: the daemon did not take its name")
            return
        }
        let backend = try await DaemonRoutingBackend.connect(connection)
        let controller = await SystemRouteController(backend: backend, applicationIdentifier: "org.mediaroute.bench")
        let picker = controller.makePicker(prioritizesVideoDevices: false)
        await picker.open()
        guard await eventually(timeout: .seconds(10), { await picker.entries().contains { $0.displayName == "Kitchen Speaker" } }),
            let entry = await picker.entries().first(where: { $0.displayName == "Kitchen Speaker" })
        else {
            print("pipewire: no Kitchen Speaker")
            return
        }
        let route = try await picker.pick(entry)
        guard await eventually(timeout: .seconds(10), { await pipewire.nodes().contains("mediaroute.kitchen_speaker") }) else {
            print("pipewire: no node")
            return
        }
        let frames = 48_000 * seconds
        let tone = try writeWAV(rate: 48_000, frames: frames) { Int16(sin(Double($0) * 2 * .pi * 440 / 48_000) * 12_000) }
        defer { try? FileManager.default.removeItem(atPath: (tone as NSString).deletingLastPathComponent) }

        let sink = processes(environment: pipewire.runtimeDirectory) { $0.contains("pipewire-sink") }
        let server = processes(environment: pipewire.runtimeDirectory) { $0.hasPrefix("/usr/bin/pipewire\0") }
        let watched = [("mediarouted pipewire-sink", sink), ("mediarouted (daemon)", [daemon.pid]), ("pipewire (server)", server)]
        let before = watched.map { cpuSeconds($0.1) }
        let begin = ContinuousClock.now
        let player = Task { try await pipewire.play(tone, target: "mediaroute.kitchen_speaker") }
        // pw-play's own pid, once it runs.
        let runtimeDirectory = pipewire.runtimeDirectory
        @Sendable func players() -> [pid_t] { processes(environment: runtimeDirectory) { $0.hasPrefix("/usr/bin/pw-play\0") } }
        _ = await eventually(timeout: .seconds(5)) { !players().isEmpty }
        let playerPids = players()
        let playerBefore = cpuSeconds(playerPids)
        var playerAfter = playerBefore
        // Underruns while pw-play still plays (the last look before it ended): those at the end
        // are the node going quiet until PipeWire pauses it and the sink closes the stream.
        var underrunsWhilePlaying: UInt64 = 0
        while !player.isCancelled, ContinuousClock.now - begin < .seconds(seconds + 30) {
            let now = cpuSeconds(playerPids)
            if now > 0 { playerAfter = now }
            if players().isEmpty { break }
            underrunsWhilePlaying = await route.audioStatistics()?.underruns ?? 0
            try await Task.sleep(for: .milliseconds(200))
        }
        let status = try await player.value
        let elapsed = ContinuousClock.now - begin
        let after = watched.map { cpuSeconds($0.1) }
        let wall = milliseconds(elapsed) / 1000
        let statistics = await route.audioStatistics()
        await controller.deactivate(route)
        await picker.close()

        print("pipewire: \(seconds) s of 48 kHz stereo S16 from pw-play (exit \(status)) to the node, \(format(wall, 1)) s wall")
        print("| process | CPU | share of one core |")
        print("|---|---|---|")
        var ours = 0.0
        for (index, (name, _)) in watched.enumerated() {
            let used = after[index] - before[index]
            if index < 2 { ours += used }
            print("| \(name) | \(format(used, 2)) s | \(format(100 * used / wall, 2)) % |")
        }
        print("| **MediaRoute (sink + daemon)** | \(format(ours, 2)) s | **\(format(100 * ours / wall, 2)) %** |")
        print("| pw-play (the app) | \(format(playerAfter - playerBefore, 2)) s | \(format(100 * (playerAfter - playerBefore) / wall, 2)) % |")
        if let statistics {
            print(
                "route: \(statistics.framesReceived) frames received, \(statistics.framesDelivered) delivered, \(statistics.underruns) underruns "
                    + "(\(underrunsWhilePlaying) while pw-play played), \(statistics.framesDropped) dropped")
        }
    }

    /// Processes whose environment has `XDG_RUNTIME_DIR=runtimeDirectory` and whose command line
    /// (arguments joined by NUL) passes `matching`.
    static func processes(environment runtimeDirectory: String, _ matching: (String) -> Bool) -> [pid_t] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { entry -> pid_t? in
            guard let pid = pid_t(entry),
                let command = try? String(contentsOfFile: "/proc/\(entry)/cmdline", encoding: .utf8), matching(command),
                let environment = try? String(contentsOfFile: "/proc/\(entry)/environ", encoding: .utf8),
                environment.split(separator: "\0").contains(where: { $0 == "XDG_RUNTIME_DIR=\(runtimeDirectory)" })
            else { return nil }
            return pid
        }
    }

    /// User and system time of these processes (all their threads), in seconds.
    static func cpuSeconds(_ pids: [pid_t]) -> Double {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        return pids.reduce(0) { total, pid in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return total }
            // Fields after the command's closing parenthesis: state is 3rd overall, utime 14th, stime 15th.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return total }
            return total + (user + system) / ticks
        }
    }
}
