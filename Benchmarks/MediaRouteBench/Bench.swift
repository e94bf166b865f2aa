import BluetoothAudio
import Coordination
import DBus
import Foundation
import LiveStreaming
import MediaRouteExecutors
import MediaRouteTestSupport
import MediaRouteTesting

/// Benchmarks whose figures go into Docs/benchmarks.md.
///
///   mediaroute-bench dbus                      D-Bus round trip and throughput, next to busctl and gdbus
///   mediaroute-bench daemon PATH/mediarouted   start-up to name, idle RSS and wake-ups
///   mediaroute-bench push                      the Now Playing push endpoint under wrk
///   mediaroute-bench hostile [DAEMON] [CTL] [RATE] [SECONDS]  the daemon's CPU and status latency under each LAN attack
///   mediaroute-bench wifi                      scan-dump parsing, and network change → SSDP search
///   mediaroute-bench bluez                     1 000 mock BLE devices, next to bleak
///   mediaroute-bench realtime [SECONDS] [LOAD] [CODEC]  one real-time A2DP stream (SBC, or aac/aptx/aptx_hd/ldac): CPU, latency added, underruns
///   mediaroute-bench bt-codecs [SECONDS]       CPU per stream of each A2DP codec (SBC, AAC, aptX, aptX HD, LDAC)
///   mediaroute-bench cast-live [RUNS] [SECONDS]  the box's audio to the Cast test receiver beside mkchromecast: first sound, latency
///   mediaroute-bench live-drift [SECONDS]      CPU of a live stream (LPCM, FLAC) with and without its clock-drift resampler
///   mediaroute-bench pipewire PATH/mediarouted [SECONDS]  pw-play → the route's PipeWire node: CPU of each process
///   mediaroute-bench raop [RUNS] [SECONDS]    AirPlay to shairport-sync: stream → first sound, CPU of one ALAC stream
///   mediaroute-bench live [RUNS] [SECONDS] [lpcm,flac,mp3,aac]  first sound and latency to gmediarender, then CPU per live stream
///   mediaroute-bench ptp-master FOLLOWER [SECONDS]  our PTP master on 319/320; against nqptp when it runs here
///   mediaroute-bench live-group [SECONDS]
///   mediaroute-bench live-group-starts [RUNS] [SECONDS]  a DLNA renderer's offset in a group, start by start (cold, warm)
///   mediaroute-bench raop-group [SECONDS] [--only mediaroute,pulseaudio,snapcast] [--delay MS] [--jitter MS] [--both-ways] [--offset-second MS]
///                                              two shairport-sync receivers in one group: offset between their outputs,
///                                              beside PulseAudio and Snapcast; optionally the second link delayed
///   mediaroute-bench airplay2-group [SECONDS]  two shairport-sync 5 receivers (MEDIAROUTE_SHAIRPORT_SYNC5, MEDIAROUTE_NQPTP)
///                                              as one AirPlay 2 group: first sound, offset between their outputs
///   mediaroute-bench upnp [mediaroutectl]      gmediarender discovery and play, next to async_upnp_client and gssdp-discover
@main
struct Bench {
    /// `realtime` runs on the daemon's own executors (``QuietExecutors``), so its figures are the
    /// daemon's path; the rest keep Swift's default executors, as when their figures were taken.
    static func main() {
        let daemonExecutors = CommandLine.arguments.dropFirst().first == "realtime"
        if daemonExecutors { QuietExecutors.install() }
        Task {
            do {
                try await run()
                exit(0)
            } catch {
                FileHandle.standardError.write(Data("mediaroute-bench: \(error)\n".utf8))
                exit(1)
            }
        }
        if daemonExecutors { QuietExecutors.runMainThread() } else { dispatchMain() }
    }

    static func run() async throws {
        let arguments = CommandLine.arguments.dropFirst()
        switch arguments.first {
        case "dbus": try await dbus()
        case "daemon": try await daemon(binary: arguments.dropFirst().first ?? ".build/release/mediarouted")
        case "clocksync": clockSync()
        case "push": try await push()
        case "wifi": try await wifi()
        case "bluez": try await bluez()
        case "bluez-decode": try await bluezDecode()
        case "cast-live": try await castLive(runs: Int(arguments.dropFirst().first ?? "") ?? 5, seconds: Int(arguments.dropFirst(2).first ?? "") ?? 10)
        case "live-drift": drift(seconds: Int(arguments.dropFirst().first ?? "") ?? 60)
        case "bt-codecs": try bluetoothCodecs(seconds: Int(arguments.dropFirst().first ?? "") ?? 60)
        case "http": try await http(host: arguments.dropFirst().first!, port: UInt16(arguments.dropFirst(2).first!)!, path: arguments.dropFirst(3).first ?? "/")
        case "realtime":
            try await realtime(
                seconds: Int(arguments.dropFirst().first ?? "") ?? 20, load: Int(arguments.dropFirst(2).first ?? "") ?? 0,
                codec: A2DPCodec(rawValue: arguments.dropFirst(3).first ?? "sbc") ?? .sbc,
                period: Int(arguments.dropFirst(4).first ?? "").map { .milliseconds($0) })
        case "pipewire":
            try await pipewire(binary: arguments.dropFirst().first ?? ".build/release/mediarouted", seconds: Int(arguments.dropFirst(2).first ?? "") ?? 60)
        case "raop": try await raop(runs: Int(arguments.dropFirst().first ?? "") ?? 10, seconds: Int(arguments.dropFirst(2).first ?? "") ?? 30)
        case "raop-group": try await raopGroup(arguments: Array(arguments.dropFirst()))
        case "airplay2-group": try await airPlay2Group(arguments: Array(arguments.dropFirst()))
        case "live":
            let encodings = arguments.dropFirst(3).first.map { $0.split(separator: ",").compactMap { LiveAudioEncoding(rawValue: String($0)) } }
            try await live(
                runs: Int(arguments.dropFirst().first ?? "") ?? 5, seconds: Int(arguments.dropFirst(2).first ?? "") ?? 10,
                encodings: encodings ?? [.lpcm, .flac, .mp3, .aac])
        case "ptp-master": try await ptpMaster(follower: arguments.dropFirst().first ?? "127.0.0.1", seconds: Int(arguments.dropFirst(2).first ?? "") ?? 10)
        case "live-group": try await liveGroup(seconds: Int(arguments.dropFirst().first ?? "") ?? 120)
        case "live-group-starts":
            try await liveGroupStarts(runs: Int(arguments.dropFirst().first ?? "") ?? 10, seconds: Int(arguments.dropFirst(2).first ?? "") ?? 8)
        case "cast": try await cast(arguments: Array(arguments.dropFirst()))
        case "hostile":
            let rest = Array(arguments.dropFirst())
            try await hostile(
                daemonBinary: rest.first ?? ".build/release/mediarouted", mediaroutectl: rest.dropFirst().first ?? ".build/release/mediaroutectl",
                rate: Int(rest.dropFirst(2).first ?? "") ?? 10_000, seconds: Double(rest.dropFirst(3).first ?? "") ?? 5)
        case "upnp": try await upnp(mediaroutectl: arguments.dropFirst().first ?? ".build/release/mediaroutectl")
        case "video": try await video(seconds: Int(arguments.dropFirst().first ?? "") ?? 60)
        case "raw-picture": try rawPicture(pictures: Int(arguments.dropFirst().first ?? "") ?? 200)
        default:
            print("usage: mediaroute-bench dbus | daemon PATH | clocksync | push | wifi | bluez | realtime [S] [LOAD] | pipewire PATH [S] | upnp [PATH/mediaroutectl] | video [S] | raw-picture [N]")
        }
    }

    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }

    static func milliseconds(_ duration: Duration) -> Double { Double(duration.components.attoseconds) / 1e15 + Double(duration.components.seconds) * 1000 }

    static func format(_ value: Double, _ digits: Int = 3) -> String { String(format: "%.\(digits)f", value) }

    // MARK: D-Bus

    static func dbus() async throws {
        let bus = try PrivateBus()
        let server = try await DBusConnection.connect(to: .address(bus.address))
        await server.export(DBusObject(interfaces: [DBusInterface("org.mediaroute.Bench", methods: [
            DBusMethod("Add", inputs: [DBusArgument("a", "i"), DBusArgument("b", "i")], outputs: [DBusArgument("sum", "i")]) { call in
                [.int32(Int32(call.arguments[0].integer! + call.arguments[1].integer!))]
            },
        ])]), at: "/bench")
        _ = try await server.requestName("org.mediaroute.Bench")
        let client = try await DBusConnection.connect(to: .address(bus.address))
        func add() async throws {
            let reply = try await client.call(destination: "org.mediaroute.Bench", path: "/bench", interface: "org.mediaroute.Bench",
                                              member: "Add", [.int32(1), .int32(2)])
            precondition(reply == [.int32(3)])
        }
        for _ in 0..<500 { try await add() }

        let clock = ContinuousClock()
        var latencies: [Double] = []
        for _ in 0..<5000 {
            let start = clock.now
            try await add()
            latencies.append(milliseconds(clock.now - start))
        }
        latencies.sort()

        let total = 50_000
        let inFlight = 64
        let start = clock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<inFlight {
                group.addTask {
                    for _ in stride(from: worker, to: total, by: inFlight) { try await add() }
                }
            }
            try await group.waitForAll()
        }
        let throughput = Double(total) / (clock.now - start).seconds

        func tool(_ command: [String], runs: Int) async throws -> [Double] {
            var times: [Double] = []
            for _ in 0..<runs {
                let begin = clock.now
                let (status, output) = try await ChildProcess.runOffPool(command)
                precondition(status == 0, output)
                times.append(milliseconds(clock.now - begin))
            }
            return times.sorted()
        }
        let busctl = try await tool(["/usr/bin/busctl", "--address=\(bus.address)", "call", "org.mediaroute.Bench", "/bench",
                                     "org.mediaroute.Bench", "Add", "ii", "1", "2"], runs: 200)
        let gdbus = try await tool(["/usr/bin/gdbus", "call", "--address", bus.address, "--dest", "org.mediaroute.Bench",
                                    "--object-path", "/bench", "--method", "org.mediaroute.Bench.Add", "1", "2"], runs: 200)

        print("| client | calls | p50 ms | p99 ms | mean ms | calls/s |")
        print("|---|---|---|---|---|---|")
        let mean = latencies.reduce(0, +) / Double(latencies.count)
        print("| MediaRoute DBus, sequential | 5000 | \(format(percentile(latencies, 0.5))) | \(format(percentile(latencies, 0.99))) | \(format(mean)) | \(format(1000 / mean, 0)) |")
        print("| MediaRoute DBus, 64 in flight | \(total) | | | | \(format(throughput, 0)) |")
        for (name, times) in [("busctl call", busctl), ("gdbus call", gdbus)] {
            let average = times.reduce(0, +) / Double(times.count)
            print("| \(name) (one process per call) | \(times.count) | \(format(percentile(times, 0.5))) | \(format(percentile(times, 0.99))) | \(format(average)) | \(format(1000 / average, 0)) |")
        }
        let p50 = percentile(latencies, 0.5)
        print("")
        print("ratio p50: busctl/MediaRoute = \(format(percentile(busctl, 0.5) / p50, 1))x, gdbus/MediaRoute = \(format(percentile(gdbus, 0.5) / p50, 1))x")
        server.close()
        client.close()
        bus.stop()
    }

    // MARK: Clock sync

    static func clockSync() {
        print("| jitter mean | skew | estimator | p50 µs | p95 µs | p99 µs |")
        print("|---|---|---|---|---|---|")
        for jitter in [0.0002, 0.002] {
            for skew in [0.0, 20e-6, 100e-6] {
                let link = SimulatedClockLink(
                    delay: 0.0003, jitterMean: jitter, requestFactor: 1.5, replyFactor: 0.5, offset: 0.25, skew: skew, seed: 7)
                for (name, result) in [
                    ("MediaRoute (low-RTT fit)", ClockSyncSimulation.run(DriftTrackingEstimator(), link: link, duration: 1200)),
                    ("median of last 200 (Snapcast)", ClockSyncSimulation.run(MedianOffsetEstimator(), link: link, duration: 1200)),
                ] {
                    print("| \(format(jitter * 1000, 1)) ms | \(format(skew * 1e6, 0)) ppm | \(name) | \(format(result.percentile(0.5) * 1e6, 0)) | \(format(result.percentile(0.95) * 1e6, 0)) | \(format(result.percentile(0.99) * 1e6, 0)) |")
                }
            }
        }
        print("")
        print("| after a +30 ms step (jitter 0.2 ms, 20 ppm) | converged within 0.2 ms after |")
        print("|---|---|")
        let link = SimulatedClockLink(delay: 0.0003, jitterMean: 0.0002, requestFactor: 1.5, replyFactor: 0.5, skew: 20e-6, seed: 7)
        for (name, result) in [
            ("MediaRoute (low-RTT fit)", ClockSyncSimulation.run(DriftTrackingEstimator(), link: link, duration: 1200, step: (600, 0.030))),
            ("median of last 200 (Snapcast)", ClockSyncSimulation.run(MedianOffsetEstimator(), link: link, duration: 1200, step: (600, 0.030))),
        ] {
            let text = result.convergenceAfterStep.flatMap { $0 < 600 ? format($0, 0) + " s" : nil } ?? "not within the remaining 600 s"
            print("| \(name) | \(text) |")
        }
    }

    // MARK: Daemon

    static func status(_ pid: pid_t, _ field: String) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            return Double(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        }
        return nil
    }

    /// Context switches per thread (voluntary + involuntary), by thread id.
    static func contextSwitches(_ pid: pid_t) -> [String: Double] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        var result: [String: Double] = [:]
        for task in tasks {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8) else { continue }
            var total = 0.0
            for line in text.split(separator: "\n") where line.contains("ctxt_switches") {
                total += Double(line.split(separator: "\t").last?.trimmingCharacters(in: .whitespaces) ?? "") ?? 0
            }
            result[task] = total
        }
        return result
    }

    /// Drops a file's pages from the page cache, as on a box that has just started the daemon
    /// from flash, where only what it reads is cached. Right after a link the whole binary is
    /// cached, and the kernel's fault-around then maps up to 64 KB of cached pages around each
    /// page the daemon touches: 14.5-14.8 MB resident instead of about 11 MB (Docs/benchmarks.md).
    static func evictFromPageCache(_ path: String) {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        _ = posix_fadvise(descriptor, 0, 0, POSIX_FADV_DONTNEED)
    }

    /// Wake-ups of threads alive at both samples, plus every switch of threads born in between.
    static func wakeups(from before: [String: Double], to after: [String: Double]) -> Double {
        after.reduce(0) { sum, entry in sum + entry.value - (before[entry.key] ?? 0) }
    }

    static func daemon(binary: String) async throws {
        evictFromPageCache(binary)
        let bus = try PrivateBus()
        let watcher = try await DBusConnection.connect(to: .address(bus.address))
        let clock = ContinuousClock()
        var startups: [Double] = []
        var running: ChildProcess?
        for run in 0..<10 {
            let changes = try await watcher.nameOwnerChanges(of: "org.mediaroute")
            let begin = clock.now
            let process = try ChildProcess([binary, "--bus", bus.address, "--log-level", "error"])
            for await change in changes where change.newOwner != nil { break }
            startups.append(milliseconds(clock.now - begin))
            if run < 9 {
                process.kill()
                process.wait()
            } else {
                running = process
            }
        }
        startups.sort()
        guard let process = running else { return }
        // Discover (a real-box daemon, so only real devices: none on a private bus), then leave: no client remains.
        let client = try await DBusConnection.connect(to: .address(bus.address))
        _ = try await client.call(destination: "org.mediaroute", path: "/org/mediaroute", interface: "org.mediaroute.Manager1",
                                  member: "StartDiscovery")
        try await Task.sleep(for: .milliseconds(500))
        let devices = try await client.call(destination: "org.mediaroute", path: "/org/mediaroute",
                                            interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects")
        client.close()
        try await Task.sleep(for: .seconds(2))
        let rss = status(process.pid, "VmRSS") ?? 0
        let before = contextSwitches(process.pid)
        try await Task.sleep(for: .seconds(10))
        let wakeups = Self.wakeups(from: before, to: contextSwitches(process.pid)) / 10
        print("| measure | value | target |")
        print("|---|---|---|")
        print("| start-up to bus name acquired, median of 10 | \(format(percentile(startups, 0.5), 1)) ms (min \(format(startups.first!, 1)), max \(format(startups.last!, 1))) | ≤ 100 ms |")
        print("| idle resident memory, \((devices.first?.dictionary?.count ?? 0)) objects published, no client | \(format(rss / 1024, 1)) MB | ≤ 12 MB |")
        print("| idle wake-ups (context switches, all threads) over 10 s | \(format(wakeups, 2)) /s | 0 |")
        process.kill()
        process.wait()
        bus.stop()
    }
}
