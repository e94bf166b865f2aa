import Foundation
import LANTransport
import MediaDevice
import RoutingModel
import MediaRouteTestSupport
import RAOPExtension
import RouteSystem
#if canImport(Glibc)
import Glibc
import MediaRouteTesting
#endif

/// AirPlay to shairport-sync 3.3.8 in a network namespace (its `stdout` backend written to a
/// file): the time from the first write to the first sound at the receiver's output, less the
/// latency asked (0.25 s), over `runs` starts; then one stream of `seconds`: the CPU of this
/// process (delivery, FFmpeg's ALAC encoder, RTP, and the writer) and of the receiver, as a
/// share of one core.
extension Bench {
    static func raop(runs: Int, seconds: Int) async throws {
        guard AirPlayReceiver.available else { return }
        let lab = try NamespaceLab(rooms: 1)
        let room = lab.rooms[0]
        let receiver = try AirPlayReceiver(in: lab, room: room, name: "Bench AirPlay")
        let latency = Duration.milliseconds(250)
        let transport = DNSSDServiceTransport(lan: LANTransport(configuration: .init(interfaces: [room.outside])), serviceTypes: [RAOPExtension.serviceType])
        let system = RouteSystem()
        try await system.load { manager in RAOPExtension(transport: transport, routingManager: manager, latency: latency) }
        await system.beginDiscovery(client: "bench")
        guard await eventually(timeout: .seconds(15), { await system.devicesList.contains { $0.displayName == "Bench AirPlay" } }),
            let device = await system.devicesList.first(where: { $0.displayName == "Bench AirPlay" })
        else {
            print("raop: shairport-sync was not found")
            return
        }
        // A 440 Hz tone with a little noise, as music compresses rather than as silence does.
        var generator = SystemRandomNumberGenerator()
        let second = (0..<44_100).flatMap { frame -> [UInt8] in
            let value = Int16(sin(Double(frame) * 2 * .pi * 440 / 44_100) * 10_000 + Double(Int.random(in: -300...300, using: &generator)))
            return [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)]
        }
        /// The first frame index from `offset` on in the receiver's output that is loud.
        func firstLoud(from offset: Int) -> Bool {
            let pcm = receiver.pcm
            var index = offset - offset % 4
            while index + 1 < pcm.count {
                if abs(Int(Int16(bitPattern: UInt16(pcm[index]) | UInt16(pcm[index + 1]) << 8))) > 200 { return true }
                index += 4
            }
            return false
        }

        var starts: [Double] = []
        for _ in 0..<runs {
            let route = try await system.activate(deviceID: device.id)
            try await system.setVolume(1, on: route.session)
            let offset = receiver.pcm.count
            let acquisition = try await system.acquireAudio(on: route.session, format: .cdAudio)
            let descriptor = acquisition.descriptor
            let begun = ContinuousClock.now
            let writer = Task.detached { _ = writeBlocking(second, to: descriptor, piece: 4_096); close(descriptor) }
            var heard: ContinuousClock.Instant?
            while ContinuousClock.now - begun < .seconds(5) {
                if firstLoud(from: offset) {
                    heard = .now
                    break
                }
                try await Task.sleep(for: .milliseconds(2))
            }
            await writer.value
            if heard == nil { print("raop: run not heard within 5 s (output \(receiver.pcm.count - offset) bytes)") }
            if let heard {
                let elapsed = heard - begun
                starts.append(Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15)
            }
            await system.deactivate(route.session)
            try await Task.sleep(for: .milliseconds(500))
        }
        let sorted = starts.sorted()
        if !sorted.isEmpty {
            print(String(format: "raop: first write → first sound in shairport-sync's output (latency asked: 250 ms): min %.1f, median %.1f, max %.1f ms (%d of %d runs heard)",
                         sorted.first!, sorted[sorted.count / 2], sorted.last!, sorted.count, runs))
        }

        // One stream of `seconds`: CPU of this process and of shairport-sync over the middle of it.
        let route = try await system.activate(deviceID: device.id)
        let acquisition = try await system.acquireAudio(on: route.session, format: .cdAudio)
        let descriptor = acquisition.descriptor
        let writer = Task.detached {
            for _ in 0..<seconds { _ = writeBlocking(second, to: descriptor, piece: 4_096) }
            close(descriptor)
        }
        try await Task.sleep(for: .seconds(3))
        let receiverPID = receiver.process.pid
        let ownBefore = processCPUSeconds(), receiverBefore = cpuSeconds([receiverPID])
        let measured = max(1, seconds - 6)
        try await Task.sleep(for: .seconds(measured))
        let own = processCPUSeconds() - ownBefore, theirs = cpuSeconds([receiverPID]) - receiverBefore
        await writer.value
        let statistics = await system.audioStatistics(on: route.session)
        print(String(format: "raop: one ALAC stream for %d s: MediaRoute %.2f %% of a core, shairport-sync %.2f %%; underruns %d, dropped %d",
                     measured, own / Double(measured) * 100, theirs / Double(measured) * 100, statistics?.underruns ?? 0, statistics?.framesDropped ?? 0))
        await system.deactivate(route.session)
        await system.shutdown()
    }

    /// User and system time of this process, in seconds.
    static func processCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}


extension Bench {
    /// Two shairport-sync receivers in two namespaces, one group (`acquireGroupAudio`), an
    /// impulse train for `seconds`: the offset between the outputs' steady clocks for each
    /// click (p50, p95 and max of the absolute offsets), from the third click on.
    /// What the second room's link does to packets (this kernel has no netem: iptables' NFQUEUE
    /// and Benchmarks/nfqueue_delay.py in the room's namespace).
    struct LinkImpairment: CustomStringConvertible {
        var delay: Double = 0
        var jitter: Double = 0
        /// Only packets towards the room's receiver (one-way), or both ways.
        var bothWays = false
        /// MediaRoute's `[audio] group-offsets` for the second receiver (ms), as a box maker who
        /// knows the link would set it.
        var offset: Double = 0

        var isClean: Bool { delay == 0 && jitter == 0 }

        var description: String {
            isClean ? "clean links" : String(format: "second link +%.0f ms, jitter 0–%.0f ms, %@", delay, jitter, bothWays ? "both ways" : "towards the receiver only")
        }

        /// Sends the room's packets through the delayer; it goes with the lab.
        func apply(to room: NamespaceLab.Room, in lab: NamespaceLab) throws {
            guard !isClean else { return }
            let rules = bothWays ? [["-A", "INPUT", "-i", room.inside], ["-A", "OUTPUT", "-o", room.inside]] : [["-A", "INPUT", "-i", room.inside]]
            for rule in rules {
                let (status, output) = try ChildProcess.run(["/usr/sbin/ip", "netns", "exec", room.namespace, "/usr/sbin/iptables-legacy"] + rule + ["-j", "NFQUEUE", "--queue-num", "7"])
                guard status == 0 else { throw PrivateBusError(message: "iptables-legacy: \(output)") }
            }
            try lab.start(in: room, ["/usr/bin/python3", "Benchmarks/nfqueue_delay.py", "7", String(delay), String(jitter)], log: "delay.log")
            for _ in 0..<200 where !lab.log("delay.log").contains("ready") { usleep(10_000) }
            guard lab.log("delay.log").contains("ready") else { throw PrivateBusError(message: "the delayer did not start: \(lab.log("delay.log"))") }
        }
    }

    /// `raop-group [SECONDS] [--only mediaroute,pulseaudio,snapcast] [--delay MS] [--jitter MS] [--both-ways] [--offset-second MS]`
    static func raopGroup(arguments: [String]) async throws {
        var seconds = 60
        var only: Set<String> = ["mediaroute", "pulseaudio", "snapcast"]
        var link = LinkImpairment()
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--only": only = Set((rest.popFirst() ?? "").split(separator: ",").map(String.init))
            case "--delay": link.delay = Double(rest.popFirst() ?? "") ?? 0
            case "--jitter": link.jitter = Double(rest.popFirst() ?? "") ?? 0
            case "--both-ways": link.bothWays = true
            case "--offset-second": link.offset = Double(rest.popFirst() ?? "") ?? 0
            default: seconds = Int(argument) ?? seconds
            }
        }
        if !link.isClean && !FileManager.default.isExecutableFile(atPath: "/usr/sbin/iptables-legacy") {
            print("raop-group: a delayed link needs iptables-legacy (apt-get install iptables)")
            return
        }
        print("raop-group: \(seconds) s, \(link)")
        if only.contains("mediaroute") { try await mediaRouteGroup(seconds: seconds, link: link) }
        if only.contains("pulseaudio") { try await pulseAudioAnchor(seconds: seconds, link: link) }
        if only.contains("snapcast") { try await snapcastAnchor(seconds: seconds, link: link) }
    }

    static func mediaRouteGroup(seconds: Int, link: LinkImpairment) async throws {
        guard AirPlayReceiver.available else { return }
        let lab = try NamespaceLab(rooms: 2)
        let left = try AirPlayReceiver(in: lab, room: lab.rooms[0], name: "Left AirPlay", timed: true)
        let right = try AirPlayReceiver(in: lab, room: lab.rooms[1], name: "Right AirPlay", timed: true)
        try link.apply(to: lab.rooms[1], in: lab)
        let transport = DNSSDServiceTransport(
            lan: LANTransport(configuration: .init(interfaces: lab.rooms.map(\.outside))), serviceTypes: [RAOPExtension.serviceType])
        var configuration = RouteSystem.Configuration()
        if link.offset != 0 { configuration.groupOffsets = ["Right AirPlay": .microseconds(Int64(link.offset * 1000))] }
        let system = RouteSystem(configuration: configuration)
        try await system.load { manager in RAOPExtension(transport: transport, routingManager: manager) }
        await system.beginDiscovery(client: "bench")
        guard await eventually(timeout: .seconds(15), { await system.devicesList.filter { $0.displayName.hasSuffix("AirPlay") }.count == 2 }) else {
            print("raop-group: the receivers were not found")
            return
        }
        var sessions: [MediaOutputSession] = []
        for name in ["Left AirPlay", "Right AirPlay"] {
            guard let device = await system.devicesList.first(where: { $0.displayName == name }) else { return }
            let route = try await system.activate(deviceID: device.id)
            try await system.setVolume(1, on: route.session)
            sessions.append(route.session)
        }
        let (acquisition, _) = try await system.acquireGroupAudio(on: sessions, format: .cdAudio)
        let descriptor = acquisition.descriptor
        let source = impulseTrain(seconds: seconds)
        await Task.detached {
            _ = writeBlocking(source, to: descriptor, piece: 4_096)
            close(descriptor)
        }.value
        try await Task.sleep(for: .seconds(3))
        guard let offsets = clickOffsets(left.output, right.output) else {
            print("raop-group: the outputs hold \(clickFrames(in: left.pcm).count) and \(clickFrames(in: right.pcm).count) clicks")
            return
        }
        report("MediaRoute → two shairport-sync receivers, one group" + (link.offset != 0 ? String(format: " (second set %+.1f ms)", link.offset) : ""), offsets, seconds: seconds)
        await system.shutdown()
    }

    /// The same measurement with PulseAudio 16.1 as the sender: `module-raop-sink` for each of
    /// two fresh shairport-sync receivers, `module-combine-sink` over them, the impulse train
    /// played into it with pacat.
    static func pulseAudioAnchor(seconds: Int, link: LinkImpairment) async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/pulseaudio"), FileManager.default.isExecutableFile(atPath: "/usr/bin/pacat") else {
            print("raop-group: skipping PulseAudio (apt-get install pulseaudio pulseaudio-module-raop pulseaudio-utils)")
            return
        }
        let lab = try NamespaceLab(rooms: 2)
        let left = try AirPlayReceiver(in: lab, room: lab.rooms[0], name: "Left AirPlay", timed: true)
        let right = try AirPlayReceiver(in: lab, room: lab.rooms[1], name: "Right AirPlay", timed: true)
        try link.apply(to: lab.rooms[1], in: lab)
        let directory = NSTemporaryDirectory() + "mr-pulse-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/native"
        try await Task.sleep(for: .seconds(2))  // the receivers listen
        try """
            load-module module-native-protocol-unix socket=\(socket) auth-anonymous=1
            load-module module-raop-sink server=\(lab.rooms[0].deviceAddress):5000 protocol=UDP encryption=none codec=ALAC sink_name=left
            load-module module-raop-sink server=\(lab.rooms[1].deviceAddress):5000 protocol=UDP encryption=none codec=ALAC sink_name=right
            """.write(toFile: directory + "/mediaroute.pa", atomically: true, encoding: .utf8)
        let pulseaudio = try ChildProcess(
            ["/bin/sh", "-c", "exec /usr/bin/pulseaudio -n --daemonize=no --exit-idle-time=-1 --use-pid-file=no -F \(directory)/mediaroute.pa 2>/tmp/mr-pulse.log"],
            environment: ["HOME": directory, "XDG_RUNTIME_DIR": directory])
        defer {
            pulseaudio.kill()
            pulseaudio.wait()
        }
        guard await eventually(timeout: .seconds(10), { FileManager.default.fileExists(atPath: socket) }) else {
            print("raop-group: PulseAudio did not start")
            return
        }
        // The combine sink only once both RAOP sinks have connected (loaded with them, its
        // stream never gets past OPTIONS: ../shared/PEERS.md).
        try await Task.sleep(for: .seconds(3))
        let (loaded, loadOutput) = try await ChildProcess.runOffPool([
            "/usr/bin/pactl", "--server=unix:\(socket)", "load-module", "module-combine-sink", "sink_name=both", "slaves=left,right",
        ])
        guard loaded == 0 else {
            print("raop-group: PulseAudio's combine sink did not load: \(loadOutput)")
            return
        }
        try await Task.sleep(for: .seconds(1))
        let input = directory + "/impulses.raw"
        try Data(impulseTrain(seconds: seconds)).write(to: URL(fileURLWithPath: input))
        let (status, output) = try await ChildProcess.runOffPool([
            "/usr/bin/timeout", String(seconds + 30), "/usr/bin/pacat", "--server=unix:\(socket)", "--device=both", "--raw", "--format=s16le", "--rate=44100", "--channels=2", input,
        ])
        guard status == 0 else {
            print("raop-group: pacat failed: \(output)")
            return
        }
        try await Task.sleep(for: .seconds(4))
        guard let offsets = clickOffsets(left.output, right.output) else {
            print("raop-group: PulseAudio's receivers' outputs hold \(clickFrames(in: left.pcm).count) and \(clickFrames(in: right.pcm).count) clicks")
            return
        }
        report("PulseAudio 16.1 → two shairport-sync receivers", offsets, seconds: seconds)
    }

    /// p50, p95 and max of the absolute offsets from the third click on; the first two apart.
    static func report(_ what: String, _ offsets: [Double], seconds: Int) {
        let steady = offsets.dropFirst(2).map(abs).sorted()
        guard !steady.isEmpty else { return }
        let start = offsets.prefix(2).map { String(format: "%.2f", $0) }.joined(separator: ", ")
        print(String(format: "raop-group: %@, %d clicks over %d s: |offset| p50 %.3f ms, p95 %.3f ms, max %.3f ms (first two clicks: %@ ms)",
                     what, steady.count, seconds, steady[steady.count / 2], steady[min(steady.count - 1, steady.count * 95 / 100)], steady.last!, start))
    }

    /// The same measurement on Snapcast 0.26: snapserver reading the impulse train from a FIFO,
    /// a snapclient in each of two namespaces (`--player file`).
    static func snapcastAnchor(seconds: Int, link: LinkImpairment) async throws {
        guard SnapcastGroup.available else { return }
        let lab = try NamespaceLab(rooms: 2)
        try link.apply(to: lab.rooms[1], in: lab)
        let snapcast = try SnapcastGroup(in: lab)
        defer {
            snapcast.server.kill()
            snapcast.server.wait()
        }
        try await Task.sleep(for: .seconds(2))
        let fifo = snapcast.fifo
        let source = impulseTrain(seconds: seconds)
        await Task.detached {
            let descriptor = open(fifo, O_WRONLY)
            guard descriptor >= 0 else {
                print("raop-group: cannot open snapserver's FIFO (errno \(errno))")
                return
            }
            // A FIFO, not a socket: write(2), which blocks while snapserver reads at the stream's pace.
            var offset = 0
            while offset < source.count {
                let wrote = source[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, min($0.count, 4_096)) }
                guard wrote > 0 else {
                    print("raop-group: writing snapserver's FIFO failed (errno \(errno))")
                    break
                }
                offset += wrote
            }
            close(descriptor)
        }.value
        try await Task.sleep(for: .seconds(3))
        guard let offsets = clickOffsets(snapcast.outputs[0], snapcast.outputs[1]) else {
            print("raop-group: Snapcast's outputs hold \(clickFrames(in: snapcast.outputs[0].pcm).count) and \(clickFrames(in: snapcast.outputs[1].pcm).count) clicks")
            return
        }
        report("Snapcast 0.26 → two snapclients", offsets, seconds: seconds)
    }
}
