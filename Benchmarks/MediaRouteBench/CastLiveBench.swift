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
        var firstSounds: [Double] = [], latencies: [Double] = []
        for run in 0..<runs {
            let lab = try NamespaceLab()
            let room = lab.rooms[0]
            let name = "Bench Speaker \(run)"
            let peer = try CastReceiverPeer(lab: lab, room: room, name: name)
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
            latencies += measured.steady
            await system.deactivate(route.session)
            await system.shutdown()
        }
        print("cast-live: MediaRoute → Cast test receiver (WAV, LIVE): first sound (the first write to its decoding) \(summary(firstSounds))")
        print("cast-live: MediaRoute steady latency (each click's write to its decoding, from the fifth click) \(summary(latencies))")
        let anchor = try await mkchromecastAnchor(runs: runs, seconds: seconds)
        if !anchor.first.isEmpty, !firstSounds.isEmpty {
            print("cast-live: mkchromecast (PulseAudio → ffmpeg WAV → its Flask server) first sound (the first write into its sink to the receiver's decoding) \(summary(anchor.first))")
            print("cast-live: mkchromecast steady latency \(summary(anchor.steady))")
            let ours = firstSounds.sorted()[firstSounds.count / 2], theirs = anchor.first.sorted()[anchor.first.count / 2]
            print(String(format: "cast-live: first sound, median: MediaRoute %.0f ms, mkchromecast %.0f ms: ratio %.3f (goal ≤ 0.5)", ours, theirs, ours / theirs))
        }
    }

    /// Writes `bytes` to `descriptor` in 4 KiB pieces on a thread of its own, then closes it:
    /// when each piece was taken, (CLOCK_MONOTONIC second, bytes so far).
    static func writeTimed(_ bytes: [UInt8], to descriptor: Int32) async -> [(Double, Int)] {
        await Task.detached { () -> [(Double, Int)] in
            var log: [(Double, Int)] = []
            var offset = 0
            while offset < bytes.count {
                let piece = Array(bytes[offset..<min(offset + 4_096, bytes.count)])
                guard writeBlocking(piece, to: descriptor, piece: 4_096) else { break }
                offset += piece.count
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
    static func mkchromecastAnchor(runs: Int, seconds: Int) async throws -> (first: [Double], steady: [Double]) {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/mkchromecast"), FileManager.default.isExecutableFile(atPath: "/usr/bin/pulseaudio") else {
            print("cast-live: anchor skipped (apt-get install mkchromecast mkchromecast-pulseaudio pulseaudio pulseaudio-utils)")
            return ([], [])
        }
        var firsts: [Double] = [], steady: [Double] = []
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
                return ([], [])
            }
            let environment = ["HOME": directory, "XDG_RUNTIME_DIR": directory, "PULSE_SERVER": "unix:\(socket)", "PATH": "/usr/bin:/bin"]
            let mkchromecast = try ChildProcess(
                ["/bin/sh", "-c", "exec /usr/bin/mkchromecast -n '\(name)' --encoder-backend ffmpeg -c wav --host \(room.hostAddress) -p 5123 >\(directory)/mkchromecast.log 2>&1"],
                environment: environment, ownProcessGroup: true)
            defer {
                mkchromecast.kill(SIGKILL)
                mkchromecast.wait()
            }
            // Casting once the receiver decodes mkchromecast's stream (silence from the sink's monitor).
            guard await eventually(timeout: .seconds(60), { peer.liveOutput.pcm.count > 44_100 * 4 }) else {
                print("cast-live: mkchromecast run \(run) did not cast: \(((try? String(contentsOfFile: directory + "/mkchromecast.log", encoding: .utf8)) ?? "").suffix(600))")
                continue
            }
            let train = firstSoundTrain(seconds: seconds)
            let fifo = directory + "/train.fifo"
            guard mkfifo(fifo, 0o600) == 0 else { return ([], []) }
            let pacat = try ChildProcess(
                ["/bin/sh", "-c", "exec /usr/bin/pacat --server=unix:\(socket) --device=Mkchromecast --raw --format=s16le --rate=44100 --channels=2 --latency-msec=20 <\(fifo)"],
                environment: environment)
            let writer = open(fifo, O_WRONLY)
            guard writer >= 0 else { return ([], []) }
            let log = await writeTimed(train, to: writer)
            pacat.wait()
            let before = peer.liveOutput.pcm.count
            _ = await eventually(timeout: .seconds(30)) { clickFrames(in: Array(peer.liveOutput.pcm.dropFirst(before))).count >= seconds * 2 }
            // The receiver decoded silence before the train: its clicks are found after that.
            let measured = soundTimes(of: peer.liveOutput, writes: log)
            if let first = measured.first { firsts.append(first) } else { print("cast-live: mkchromecast run \(run) not heard") }
            steady += measured.steady
        }
        return (firsts, steady)
    }
}
