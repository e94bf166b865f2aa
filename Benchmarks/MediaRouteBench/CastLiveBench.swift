import CastExtension
import Foundation
import LANTransport
import MediaDevice
import MediaRouteTestSupport
import MediaRouteTesting
import RouteSystem
import RoutingModel
#if canImport(Glibc)
import Glibc
#endif

/// The box's audio live to the Cast test receiver in a network namespace (announced over
/// mDNS), beside mkchromecast (Debian 12) sending a PulseAudio sink's audio to the same
/// receiver. The receiver decodes what it fetches with ffmpeg at once and time-stamps each read
/// (real Chromecasts buffer ~512 KB first): the figures compare the senders' paths only.
extension Bench {
    static func castLive(runs: Int, seconds: Int) async throws {
        guard CastReceiverPeer.available, NamespaceLab.isAvailable else { return }
        var firstSounds: [Double] = [], latencies: [Double] = [], coldStarts: [Double] = []
        for run in 0..<runs {
            let lab = try NamespaceLab()
            let room = lab.rooms[0]
            let name = "Bench Speaker \(run)"
            let peer = try CastReceiverPeer(lab: lab, room: room, name: name)
            try await Task.sleep(for: .seconds(1))  // the receiver announces itself
            let start = monotonicSeconds()
            let system = RouteSystem()
            let lan = LANTransport(configuration: .init(interfaces: [room.outside]))
            let transport = DNSSDServiceTransport(lan: lan, serviceTypes: [CastExtension.serviceType], tls: true)
            try await system.load { manager in CastExtension(transport: transport, routingManager: manager) }
            await system.beginDiscovery(client: "bench")
            guard await eventually(timeout: .seconds(15), { await system.devicesList.contains { $0.displayName == name } }),
                let device = await system.devicesList.first(where: { $0.displayName == name })
            else {
                print("cast-live: the receiver was not found")
                return
            }
            let route = try await system.activate(deviceID: device.id)
            let acquisition = try await system.acquireAudio(on: route.session, format: .cdAudio)
            let log = await writeTimed(firstSoundTrain(seconds: seconds), to: acquisition.descriptor)
            _ = await eventually(timeout: .seconds(10)) { clickFrames(in: peer.liveOutput.pcm).count >= seconds * 2 }
            let measured = soundTimes(of: peer.liveOutput, writes: log)
            if let first = measured.first { firstSounds.append(first) } else { print("cast-live: run \(run) not heard") }
            if let frame = clickFrames(in: peer.liveOutput.pcm).first, let heard = peer.liveOutput.clock()(frame) { coldStarts.append((heard - start) * 1000) }
            latencies += measured.steady
            await system.deactivate(route.session)
            await system.shutdown()
        }
        print("cast-live: MediaRoute → Cast test receiver (WAV, LIVE): first sound (the first write to its decoding) \(summary(firstSounds))")
        print("cast-live: MediaRoute steady latency (each click's write to its decoding, from the fifth click) \(summary(latencies))")
        print("cast-live: MediaRoute from the sender's start (discovery, activation, acquisition, the first write) to the first sound \(summary(coldStarts))")
        let anchor = try await mkchromecastAnchor(runs: runs, seconds: seconds)
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        if !anchor.cold.isEmpty, !coldStarts.isEmpty {
            print("cast-live: mkchromecast from its start (its sink already playing) to the first sound \(summary(anchor.cold))")
            print(String(format: "cast-live: from the sender's start to the first sound, median: MediaRoute %.0f ms, mkchromecast %.0f ms: ratio %.3f (goal ≤ 0.5)", median(coldStarts), median(anchor.cold), median(coldStarts) / median(anchor.cold)))
        }
        if !anchor.first.isEmpty, !firstSounds.isEmpty {
            print("cast-live: mkchromecast, casting already (silence): the first write into its sink to the receiver's decoding \(summary(anchor.first))")
            print("cast-live: mkchromecast steady latency \(summary(anchor.steady))")
            print(String(format: "cast-live: the first write to its sound, median: MediaRoute %.0f ms, mkchromecast (casting already) %.0f ms: ratio %.3f", median(firstSounds), median(anchor.first), median(firstSounds) / median(anchor.first)))
        }
    }

    /// Writes `bytes` to `descriptor` (a socket or a pipe) in 4 KiB pieces on a thread of its
    /// own, then closes it: when each piece was taken, (CLOCK_MONOTONIC second, bytes so far).
    static func writeTimed(_ bytes: [UInt8], to descriptor: Int32) async -> [(Double, Int)] {
        signal(SIGPIPE, SIG_IGN)  // a reader gone is a failed write here, not the end of the bench
        return await Task.detached { () -> [(Double, Int)] in
            var log: [(Double, Int)] = []
            var offset = 0
            while offset < bytes.count {
                let count = min(4_096, bytes.count - offset)
                let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + offset, count) }
                if written < 0, errno == EINTR { continue }
                guard written > 0 else { break }
                offset += written
                log.append((monotonicSeconds(), offset))
            }
            close(descriptor)
            return log
        }.value
    }

    /// mkchromecast 0.3.9 (Debian 12) with its ffmpeg backend and WAV (its lowest-latency codec)
    /// casting a private PulseAudio's `Mkchromecast` sink to the receiver; once the receiver
    /// decodes its stream, the same train is played into that sink with pacat (its first write
    /// is the start). First sounds and steady latencies in ms; empty without mkchromecast.
    static func mkchromecastAnchor(runs: Int, seconds: Int) async throws -> (cold: [Double], first: [Double], steady: [Double]) {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/mkchromecast"), FileManager.default.isExecutableFile(atPath: "/usr/bin/pulseaudio") else {
            print("cast-live: anchor skipped (apt-get install mkchromecast mkchromecast-pulseaudio pulseaudio pulseaudio-utils)")
            return ([], [], [])
        }
        var colds: [Double] = [], firsts: [Double] = [], steady: [Double] = []
        for run in 0..<runs {
            let lab = try NamespaceLab()
            let room = lab.rooms[0]
            let name = "Anchor Speaker \(run)"
            let peer = try CastReceiverPeer(lab: lab, room: room, name: name)
            let directory = NSTemporaryDirectory() + "mr-mkcc-\(UUID().uuidString.prefix(8))"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let socket = directory + "/native"
            try "load-module module-native-protocol-unix socket=\(socket) auth-anonymous=1\n".write(
                toFile: directory + "/mediaroute.pa", atomically: true, encoding: .utf8)
            let pulseaudio = try ChildProcess(
                ["/bin/sh", "-c", "exec /usr/bin/pulseaudio -n --daemonize=no --exit-idle-time=-1 --use-pid-file=no -F \(directory)/mediaroute.pa 2>\(directory)/pulse.log"],
                environment: ["HOME": directory, "XDG_RUNTIME_DIR": directory])
            defer {
                pulseaudio.kill()
                pulseaudio.wait()
            }
            guard await eventually(timeout: .seconds(10), { FileManager.default.fileExists(atPath: socket) }) else {
                print("cast-live: PulseAudio did not start")
                return ([], [], [])
            }
            let environment = ["HOME": directory, "XDG_RUNTIME_DIR": directory, "PULSE_SERVER": "unix:\(socket)", "PATH": "/usr/bin:/bin"]
            // The sink mkchromecast records, made first and playing a tone: its start to the first sound.
            // (A port of its own per run: the Flask server of the run before can outlive its kill.)
            _ = try await ChildProcess.runOffPool(
                ["/usr/bin/pactl", "--server=unix:\(socket)", "load-module", "module-null-sink", "sink_name=Mkchromecast", "sink_properties=device.description=Mkchromecast"])
            let toneFile = directory + "/tone.raw"
            try Data(tone(seconds: 60)).write(to: URL(fileURLWithPath: toneFile))
            let tonePlayer = try ChildProcess(
                ["/usr/bin/pacat", "--server=unix:\(socket)", "--device=Mkchromecast", "--raw", "--format=s16le", "--rate=44100", "--channels=2", toneFile],
                environment: environment)
            defer {
                tonePlayer.kill(SIGKILL)
                tonePlayer.wait()
            }
            try await Task.sleep(for: .milliseconds(500))
            let start = monotonicSeconds()
            let mkchromecast = try ChildProcess(
                ["/bin/sh", "-c", "exec /usr/bin/mkchromecast -n '\(name)' --encoder-backend ffmpeg -c wav --host \(room.hostAddress) -p \(5_123 + run) >\(directory)/mkchromecast.log 2>&1"],
                environment: environment, ownProcessGroup: true)
            defer {
                mkchromecast.kill(SIGKILL)
                mkchromecast.wait()
            }
            guard await eventually(timeout: .seconds(60), { !clickFrames(in: peer.liveOutput.pcm).isEmpty }),
                let frame = clickFrames(in: peer.liveOutput.pcm).first, let heard = peer.liveOutput.clock()(frame)
            else {
                print("cast-live: mkchromecast run \(run) did not cast: \(((try? String(contentsOfFile: directory + "/mkchromecast.log", encoding: .utf8)) ?? "").suffix(600))")
                continue
            }
            colds.append((heard - start) * 1000)
            // Casting (the tone stopped: silence from the sink's monitor), the train from a pipe of
            // one page (a pipe's default 64 KiB would hold 0.37 s ahead of the sink).
            tonePlayer.kill(SIGKILL)
            try await Task.sleep(for: .seconds(1))
            let train = firstSoundTrain(seconds: seconds)
            let fifo = directory + "/train.fifo"
            guard mkfifo(fifo, 0o600) == 0 else { return (colds, firsts, steady) }
            let pacat = try ChildProcess(
                ["/bin/sh", "-c", "exec /usr/bin/pacat --server=unix:\(socket) --device=Mkchromecast --raw --format=s16le --rate=44100 --channels=2 --latency-msec=20 <\(fifo)"],
                environment: environment)
            let writer = open(fifo, O_WRONLY)
            guard writer >= 0 else { return ([], [], []) }
            _ = fcntl(writer, 1031 /* F_SETPIPE_SZ */, 4_096)
            let before = peer.liveOutput.pcm.count
            let inputs = Task {
                try? await Task.sleep(for: .seconds(1))
                return try? await ChildProcess.runOffPool(["/usr/bin/pactl", "--server=unix:\(socket)", "list", "short", "sink-inputs"]).output
            }
            let log = await writeTimed(train, to: writer)
            let pacatStatus = pacat.wait()
            let playing = await inputs.value
            _ = await eventually(timeout: .seconds(30)) { clickFrames(in: Array(peer.liveOutput.pcm.dropFirst(before))).count >= seconds * 2 }
            // The receiver decoded silence before the train: its clicks are found after that.
            let measured = soundTimes(of: peer.liveOutput, writes: log, fromFrame: before / 4)
            if let first = measured.first {
                firsts.append(first)
            } else {
                let after = leftChannel(Array(peer.liveOutput.pcm.dropFirst(before)))
                let sinks = try? await ChildProcess.runOffPool(["/usr/bin/pactl", "--server=unix:\(socket)", "list", "short", "sinks"])
                print("cast-live: mkchromecast run \(run) not heard: \(after.count) frames decoded after the train began, loudest \(after.map(abs).max() ?? 0); sink inputs while pacat played: \(playing ?? "?"); pacat exit \(pacatStatus); sinks: \(sinks?.output ?? "?"); \(((try? String(contentsOfFile: directory + "/mkchromecast.log", encoding: .utf8)) ?? "").suffix(400))")
            }
            steady += measured.steady
        }
        return (colds, firsts, steady)
    }
}
