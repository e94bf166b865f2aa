import Foundation
import LANTransport
import LiveStreaming
import MediaDevice
import MediaRouteTestSupport
import MediaRouteTesting
import RouteSystem
import RoutingModel
import UPnPRendererExtension
import RAOPExtension
#if canImport(Glibc)
import Glibc
#endif

/// The box's audio live to gmediarender in a network namespace, its output written by a sink
/// synced to its pipeline clock and time-stamped as it comes (``TimedOutput``): for each run,
/// first sound (the first write to the first click heard) and the steady latency (each click's
/// write to its sound); then the CPU of one stream in this process (delivery, the live stream,
/// the HTTP server). Beside it, the anchor: rygel's gst-launch live item (Debian
/// `rygel-gst-launch`) played on the same renderer (``rygelAnchor(runs:)``).
extension Bench {
    static func live(runs: Int, seconds: Int, encodings: [LiveAudioEncoding] = [.lpcm, .flac, .mp3, .aac]) async throws {
        guard NamespaceLab.renderersAvailable else { return }
        var firstSounds: [Double] = []
        var latencies: [Double] = []
        for run in 0..<runs {
            let lab = try NamespaceLab(rooms: 1)
            let room = lab.rooms[0]
            let output = TimedOutput(pcmPath: lab.path("out.pcm"), timesPath: lab.path("times.txt"))
            let name = "Bench Renderer \(run)"
            try lab.gmediarender(in: room, name: name, uuid: "0a1b2c3d-0000-4000-8000-0000000001\(String(format: "%02d", run))", recording: output)
            let system = RouteSystem()
            let transport = LANTransport(configuration: .init(interfaces: [room.outside]))
            try await system.load { manager in UPnPRendererExtension(transport: transport, routingManager: manager) }
            await system.beginDiscovery(client: "bench")
            guard await eventually(timeout: .seconds(15), { await system.devicesList.contains { $0.displayName == name && $0.capabilities.contains(.realtimeAudioStreaming) } }),
                let device = await system.devicesList.first(where: { $0.displayName == name })
            else {
                print("live: gmediarender was not found")
                return
            }
            let route = try await system.activate(deviceID: device.id)
            let acquisition = try await system.acquireAudio(on: route.session, format: .cdAudio)
            let train = firstSoundTrain(seconds: seconds)
            // When each piece of the train was taken by the daemon: (CLOCK_MONOTONIC seconds, bytes so far).
            let log = await writeTimed(train, to: acquisition.descriptor)
            _ = await eventually(timeout: .seconds(10)) { clickFrames(in: output.pcm).count >= seconds * 2 }
            let clicks = clickFrames(in: output.pcm)
            let measured = soundTimes(of: output, writes: log)
            if let first = measured.first { firstSounds.append(first) }
            latencies += measured.steady
            if clicks.isEmpty { print("live: run \(run) not heard: \(lab.log("gmediarender-\(room.inside).log").suffix(400))") }
            await system.deactivate(route.session)
            await system.shutdown()
        }
        print("live: gmediarender (LPCM, close-delimited, its prime 0, delivered every 100 ms): first sound (the first write to its sound) \(summary(firstSounds))")
        print("live: gmediarender steady latency (each click's write to its sound, from the fifth click) \(summary(latencies))")
        let anchor = try await rygelAnchor(runs: runs)
        if !anchor.isEmpty, !firstSounds.isEmpty {
            let ours = firstSounds.sorted()[firstSounds.count / 2], theirs = anchor.sorted()[anchor.count / 2]
            print("live: anchor, rygel's gst-launch live item on the same gmediarender: first sound (SetAVTransportURI to its sound) \(summary(anchor))")
            print(String(format: "live: first sound, median: MediaRoute %.0f ms, rygel gst-launch %.0f ms: ratio %.2f (goal ≤ 0.5)", ours, theirs, ours / theirs))
        }
        for encoding in encodings { try await liveCPU(seconds: max(20, seconds), encoding: encoding) }
    }

    /// min, median, p95 and max of `values` (ms).
    static func summary(_ values: [Double]) -> String {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return "none" }
        return String(format: "min %.0f, median %.0f, p95 %.0f, max %.0f ms (n=%d)", sorted.first!, sorted[sorted.count / 2], sorted[min(sorted.count - 1, sorted.count * 95 / 100)], sorted.last!, sorted.count)
    }

    /// A tenth of a second of tone (the first sound), then quiet with a click every half second
    /// from 0.5 s: stereo S16LE at 44.1 kHz.
    static func firstSoundTrain(seconds: Int) -> [UInt8] {
        var train = impulseTrain(seconds: seconds)
        let toneStart = tone(seconds: 0.1)
        train.replaceSubrange(0..<toneStart.count, with: toneStart)
        for frame in 0..<(seconds * 44_100) where frame % 22_050 == 11_025 {
            train.replaceSubrange(frame * 4..<frame * 4 + 4, with: [0, 0, 0, 0])
            if frame + 11_025 < seconds * 44_100 {
                let click = (frame + 11_025) * 4
                train.replaceSubrange(click..<click + 4, with: [0x20, 0x4E, 0x20, 0x4E])
            }
        }
        return train
    }

    /// In ms, from `output` (heard) and `writes` ((CLOCK_MONOTONIC second, bytes so far) of the
    /// ``firstSoundTrain(seconds:)``): the first write to the first sound, and each click's write
    /// to its sound from the fifth click.
    static func soundTimes(of output: TimedOutput, writes log: [(Double, Int)], fromFrame start: Int = 0) -> (first: Double?, steady: [Double]) {
        let clicks = clickFrames(in: Array(output.pcm.dropFirst(start * 4))).map { $0 + start }
        let played = output.clock()
        /// When source frame `frame` was taken.
        func written(_ frame: Int) -> Double? { log.first { $0.1 >= (frame + 1) * 4 }?.0 }
        var first: Double?
        // clicks[0] is the tone's start; clicks[i] the click at source frame 22 050 × i.
        if let firstWrite = log.first?.0, let firstClick = clicks.first, let heard = played(firstClick) {
            first = (heard - firstWrite) * 1000
        }
        var steady: [Double] = []
        for (index, frame) in clicks.enumerated() where index >= 4 {
            guard let heard = played(frame), let sent = written(index * 22_050) else { continue }
            steady.append((heard - sent) * 1000)
        }
        return (first, steady)
    }

    /// The anchor: rygel's gst-launch live item (a 440 Hz tone made by `audiotestsrc` when the
    /// renderer fetches it, as L16 — the format MediaRoute sends gmediarender) played on
    /// gmediarender in the same namespace by a control point (Benchmarks/rygel_anchor.py):
    /// from its SetAVTransportURI to the first sound, in ms, per run; empty without
    /// rygel-gst-launch.
    static func rygelAnchor(runs: Int) async throws -> [Double] {
        guard FileManager.default.fileExists(atPath: "/usr/lib/x86_64-linux-gnu/rygel-2.8/plugins/librygel-gst-launch.so") else {
            print("live: anchor skipped: rygel-gst-launch is not installed (apt-get install rygel-gst-launch)")
            return []
        }
        var firstSounds: [Double] = []
        for run in 0..<runs {
            let lab = try NamespaceLab(rooms: 1)
            let room = lab.rooms[0]
            let output = TimedOutput(pcmPath: lab.path("out.pcm"), timesPath: lab.path("times.txt"))
            try lab.gmediarender(in: room, name: "Anchor Renderer \(run)", uuid: "0a1b2c3d-0000-4000-8000-0000000002\(String(format: "%02d", run))", recording: output)
            try lab.rygelGstLaunch(
                in: room, title: "Live tone", mime: "audio/x-wav",
                // No dot anywhere in the line: rygel names the resource from it and a dot breaks its URI.
                launch: "audiotestsrc is-live=true freq=440 ! audio/x-raw,format=S16LE,rate=44100,channels=2 ! wavenc")
            let control = try await ChildProcess.runOffPool(["/usr/bin/python3", "Benchmarks/rygel_anchor.py", room.deviceAddress, "Live tone", "http://\(room.deviceAddress):49494/description.xml"])
            guard control.status == 0, let line = control.output.split(separator: "\n").last,
                let json = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], let start = json["start"] as? Double
            else {
                print("live: anchor run \(run) failed: \(control.output.suffix(300)) \(lab.log("rygel-gst-launch-\(room.inside).log").suffix(300))")
                continue
            }
            _ = await eventually(timeout: .seconds(10)) { !clickFrames(in: output.pcm).isEmpty }
            if let first = clickFrames(in: output.pcm).first, let heard = output.clock()(first) {
                firstSounds.append((heard - start) * 1000)
            } else {
                print("live: anchor run \(run) not heard (\(json["protocolInfo"] ?? "")): \(lab.log("gmediarender-\(room.inside).log").suffix(300))")
            }
        }
        return firstSounds
    }

    /// One stream of `seconds` of a tone in `encoding`: CPU of this process over its middle.
    static func liveCPU(seconds: Int, encoding: LiveAudioEncoding) async throws {
        let lab = try NamespaceLab(rooms: 1)
        let room = lab.rooms[0]
        try lab.gmediarender(in: room, name: "Bench CPU", uuid: "0a1b2c3d-0000-4000-8000-000000000199")
        let system = RouteSystem()
        let transport = LANTransport(configuration: .init(interfaces: [room.outside]))
        var configuration = UPnPRendererExtension.Configuration()
        configuration.live.forcedEncodings["Bench CPU"] = encoding
        try await system.load { manager in UPnPRendererExtension(transport: transport, routingManager: manager, configuration: configuration) }
        await system.beginDiscovery(client: "bench")
        guard await eventually(timeout: .seconds(15), { await system.devicesList.contains { $0.displayName == "Bench CPU" } }),
            let device = await system.devicesList.first(where: { $0.displayName == "Bench CPU" })
        else { return }
        let route = try await system.activate(deviceID: device.id)
        let acquisition = try await system.acquireAudio(on: route.session, format: .cdAudio)
        let descriptor = acquisition.descriptor
        let second = tone(seconds: 1)
        let writer = Task.detached {
            for _ in 0..<seconds { _ = writeBlocking(second, to: descriptor, piece: 4_096) }
            close(descriptor)
        }
        try await Task.sleep(for: .seconds(3))
        let before = processCPUSeconds()
        let measured = seconds - 6
        try await Task.sleep(for: .seconds(measured))
        let used = processCPUSeconds() - before
        await writer.value
        let statistics = await system.audioStatistics(on: route.session)
        print("live: one \(encoding.codecName) " + String(format: "stream to gmediarender for %d s: MediaRoute (writer included) %.2f %% of a core; underruns %d, dropped %d",
                     measured, used / Double(measured) * 100, statistics?.underruns ?? 0, statistics?.framesDropped ?? 0))
        await system.deactivate(route.session)
        await system.shutdown()
    }
}

extension Bench {
    /// The issue's mixed group: shairport-sync and gmediarender in two namespaces, one group
    /// (`acquireGroupAudio`), an impulse train for `seconds`; the offset between the two
    /// outputs for each click (p50, p95 and max of the absolute offsets, from the third click),
    /// each output timed when it played (shairport-sync's stdout backend writes 1 s ahead).
    static func liveGroup(seconds: Int) async throws {
        guard NamespaceLab.renderersAvailable, AirPlayReceiver.available else { return }
        // Made before anything starts: an hour of it takes a minute or two, and a receiver
        // that hears nothing for two minutes ends its session (shairport-sync: "Too long a silence").
        let train = impulseTrain(seconds: seconds)
        guard let rig = try await MixedGroupRig(airPlay: "Group AirPlay", renderer: "Group Renderer", uuid: "0a1b2c3d-0000-4000-8000-000000000150", bench: "live-group")
        else { return }
        let (system, devices, receiver, rendererOutput) = (rig.system, rig.devices, rig.receiver, rig.rendererOutput)
        var sessions: [MediaOutputSession] = []
        for device in devices { sessions.append(try await system.activate(deviceID: device.id).session) }
        let (acquisition, leads) = try await system.acquireGroupAudio(on: sessions, format: .cdAudio)
        let descriptor = acquisition.descriptor
        let residentBefore = status(getpid(), "VmRSS") ?? 0
        // Each member's delivery and drift estimate once a minute while the stream runs (a
        // route's estimate is gone once its stream ended).
        let sampler = Task {
            var minute = 0
            while (try? await Task.sleep(for: .seconds(60))) != nil {
                minute += 1
                for (device, session) in zip(devices, sessions) {
                    let statistics = await system.audioStatistics(on: session)
                    let details = await system.routeStatus(on: session)?.details
                    let clockPPM = details?.deviceClockPPM.map { String(format: "%+.1f", $0) } ?? "none"
                    let offset = details?.timelineOffsetMicroseconds.map { String(format: "%+.1f", Double($0) / 1000) } ?? "none"
                    let correction = details?.driftCorrectionPPM.map { String(format: "%+.1f", $0) } ?? "none"
                    print("live-group: minute \(minute), \(device.displayName): underruns \(statistics?.underruns ?? 0), dropped \(statistics?.framesDropped ?? 0); "
                        + "its clock \(clockPPM) ppm, timeline offset \(offset) ms, correction \(correction) ppm")
                }
                // Into a file too, at once: a long run's progress can be read while it runs.
                fflush(nil)
            }
        }
        let log = await writeTimed(train, to: descriptor)
        sampler.cancel()
        let residentAfter = status(getpid(), "VmRSS") ?? 0
        _ = await eventually(timeout: .seconds(10)) { clickFrames(in: rendererOutput.pcm).count >= seconds * 2 && clickFrames(in: receiver.pcm).count >= seconds * 2 }
        // Click by click in order; where the counts differ (shairport-sync's first burst can
        // merge two), each of the renderer's clicks against the receiver's nearest.
        let offsets = clickOffsets(receiver.output, rendererOutput) ?? nearestClickOffsets(receiver.output, rendererOutput)
        guard offsets.count > 2 else {
            print("live-group: the outputs hold \(clickFrames(in: receiver.pcm).count) and \(clickFrames(in: rendererOutput.pcm).count) clicks")
            return
        }
        let settled = offsets.dropFirst(2)
        let sorted = settled.map(abs).sorted()
        let mean = settled.reduce(0, +) / Double(max(1, settled.count))
        print(String(format: "live-group: AirPlay (shairport-sync) + DLNA (gmediarender), %d s, leads %@: offset per click (AirPlay − DLNA: negative when the renderer is later) mean %+.1f ms; |offset| p50 %.1f, p95 %.1f, max %.1f ms (n=%d)",
                     seconds, "\(leads)", mean, sorted[sorted.count / 2], sorted[min(sorted.count - 1, sorted.count * 95 / 100)], sorted.last ?? 0, sorted.count))
        print(String(format: "live-group: this process resident %.1f MB at the first write, %.1f MB at the last", residentBefore / 1024, residentAfter / 1024))
        if seconds >= 1_200 { groupWindows(seconds: seconds, offsets: Array(settled), log: log, outputs: [("AirPlay", receiver.output), ("DLNA", rendererOutput)]) }
        for session in sessions { await system.deactivate(session) }
        await system.shutdown()
        withExtendedLifetime(rig) {}
    }
}

extension Bench {
    /// A long group run by ten-minute windows: the offset between the outputs and each
    /// output's latency (a click's write to its sound), so growth over the hours shows.
    static func groupWindows(seconds: Int, offsets: [Double], log: [(Double, Int)], outputs: [(String, TimedOutput)]) {
        let window = 600, clicksPerWindow = window * 2
        /// When source frame `frame` was taken (bisection: the log holds a line per 4 KiB).
        func written(_ frame: Int) -> Double? {
            var low = 0, high = log.count
            while low < high {
                let middle = (low + high) / 2
                if log[middle].1 < (frame + 1) * 4 { low = middle + 1 } else { high = middle }
            }
            return low < log.count ? log[low].0 : nil
        }
        var latencies: [String: [Int: [Double]]] = [:]
        for (name, output) in outputs {
            let clock = output.clock()
            // The train's clicks are at frames 11 025 + 22 050 × i; matched to the output's in order.
            for (index, frame) in clickFrames(in: output.pcm).enumerated() {
                guard let heard = clock(frame), let sent = written(11_025 + 22_050 * index) else { continue }
                latencies[name, default: [:]][index / clicksPerWindow, default: []].append((heard - sent) * 1000)
            }
        }
        func median(_ values: [Double]) -> Double { values.isEmpty ? .nan : values.sorted()[values.count / 2] }
        for start in stride(from: 0, to: seconds, by: window) {
            let index = start / window
            // `offsets` starts at the third click.
            let low = max(0, index * clicksPerWindow - 2), high = min(offsets.count, (index + 1) * clicksPerWindow - 2)
            guard low < high else { continue }
            let part = Array(offsets[low..<high]), magnitudes = part.map(abs).sorted()
            var line = String(
                format: "live-group: minutes %3d–%3d: offset mean %+.1f ms, |offset| p50 %.1f, p95 %.1f, max %.1f (n=%d)", start / 60, (start + window) / 60,
                part.reduce(0, +) / Double(part.count), magnitudes[magnitudes.count / 2], magnitudes[min(magnitudes.count - 1, magnitudes.count * 95 / 100)],
                magnitudes.last ?? 0, magnitudes.count)
            for (name, _) in outputs { line += String(format: "; %@ latency median %.1f ms", name, median(latencies[name]?[index] ?? [])) }
            print(line)
        }
    }
}

extension Bench {
    /// How far a DLNA renderer's start moves it off a group, start by start — what a
    /// calibrated latency per device kind can and cannot absorb. Each run is a new lab:
    /// gmediarender just started (its first play loads its parser plugin: "cold") plays one
    /// group with shairport-sync for `seconds`, then the same pair plays a second group
    /// ("warm"). Per start, the mean offset AirPlay − DLNA (negative: the renderer later) over
    /// its clicks after the second.
    static func liveGroupStarts(runs: Int, seconds: Int) async throws {
        guard NamespaceLab.renderersAvailable, AirPlayReceiver.available else { return }
        var cold: [Double] = [], warm: [Double] = []
        for run in 0..<runs {
            guard
                let rig = try await MixedGroupRig(
                    airPlay: "Start AirPlay", renderer: "Start Renderer", uuid: "0a1b2c3d-0000-4000-8000-0000000003\(String(format: "%02d", run % 100))",
                    bench: "live-group-starts")
            else { return }
            let (system, devices, receiver, rendererOutput) = (rig.system, rig.devices, rig.receiver, rig.rendererOutput)
            for start in 0..<2 {
                let before = (clickFrames(in: receiver.pcm).count, clickFrames(in: rendererOutput.pcm).count)
                var sessions: [MediaOutputSession] = []
                for device in devices { sessions.append(try await system.activate(deviceID: device.id).session) }
                let (acquisition, _) = try await system.acquireGroupAudio(on: sessions, format: .cdAudio)
                _ = await writeTimed(impulseTrain(seconds: seconds), to: acquisition.descriptor)
                _ = await eventually(timeout: .seconds(10)) {
                    clickFrames(in: rendererOutput.pcm).count >= before.1 + seconds * 2 && clickFrames(in: receiver.pcm).count >= before.0 + seconds * 2
                }
                for session in sessions { await system.deactivate(session) }
                let offsets = startOffsets(receiver.output, rendererOutput, after: before)
                if offsets.count >= seconds {
                    let mean = offsets.reduce(0, +) / Double(offsets.count)
                    if start == 0 { cold.append(mean) } else { warm.append(mean) }
                    print(String(format: "live-group-starts: run %d, %@ start: offset AirPlay − DLNA mean %+.1f ms (n=%d)", run, start == 0 ? "cold" : "warm", mean, offsets.count))
                } else {
                    print("live-group-starts: run \(run), start \(start): only \(offsets.count) clicks matched")
                }
                // shairport-sync takes a new session once the last one is torn down.
                try await Task.sleep(for: .seconds(2))
            }
            await system.shutdown()
            withExtendedLifetime(rig) {}
        }
        func line(_ name: String, _ values: [Double]) -> String {
            let sorted = values.sorted()
            guard let low = sorted.first, let high = sorted.last else { return "\(name): none" }
            return String(format: "%@: median %+.1f ms, min %+.1f, max %+.1f (n=%d)", name, sorted[sorted.count / 2], low, high, sorted.count)
        }
        print("live-group-starts: offset AirPlay − DLNA per start (negative: the renderer later); " + line("cold", cold) + "; " + line("warm", warm))
        let all = (cold + warm).sorted()
        if let low = all.first, let high = all.last {
            // A longer declared latency gives the renderer less lead: it plays earlier by as much.
            print(String(format: "live-group-starts: the starts span %.1f ms; the renderer's latency %+.1f ms centres them, each then within ±%.1f ms",
                         high - low, -(low + high) / 2, (high - low) / 2))
        }
    }

    /// Offsets (ms, AirPlay − DLNA) of the clicks each output played after `before` (clicks
    /// each held then), from the third: each renderer click against the receiver's nearest
    /// within a quarter second.
    static func startOffsets(_ receiver: TimedOutput, _ renderer: TimedOutput, after before: (Int, Int)) -> [Double] {
        nearestClickOffsets(receiver, renderer, skippingA: before.0, skippingB: before.1 + 2).map { -$0 }
    }
}

/// The mixed group's peers: shairport-sync (timed) and gmediarender (recorded) in two
/// namespaces, both found by one route system; kept together so the lab lives as long as they do.
struct MixedGroupRig {
    let lab: NamespaceLab
    let rendererOutput: TimedOutput
    let receiver: AirPlayReceiver
    let system: RouteSystem
    /// The AirPlay receiver, then the renderer.
    let devices: [SystemDevice]

    /// Nil (and says so, as `bench`) when either device is not found within 20 s.
    init?(airPlay: String, renderer: String, uuid: String, bench: String) async throws {
        lab = try NamespaceLab(rooms: 2)
        rendererOutput = TimedOutput(pcmPath: lab.path("renderer.pcm"), timesPath: lab.path("renderer-times.txt"))
        try lab.gmediarender(in: lab.rooms[0], name: renderer, uuid: uuid, recording: rendererOutput)
        receiver = try AirPlayReceiver(in: lab, room: lab.rooms[1], name: airPlay, timed: true)
        let lan = LANTransport(configuration: .init(interfaces: lab.rooms.map(\.outside)))
        let browse = DNSSDServiceTransport(lan: lan, serviceTypes: [RAOPExtension.serviceType])
        let system = RouteSystem()
        try await system.load { manager in UPnPRendererExtension(transport: lan, routingManager: manager) }
        try await system.load { manager in RAOPExtension(transport: browse, routingManager: manager) }
        await system.beginDiscovery(client: "bench")
        self.system = system
        var devices: [SystemDevice] = []
        for name in [airPlay, renderer] {
            guard await eventually(timeout: .seconds(20), { await system.devicesList.contains { $0.displayName == name && $0.capabilities.contains(.realtimeAudioStreaming) } }),
                let device = await system.devicesList.first(where: { $0.displayName == name })
            else {
                print("\(bench): \(name) was not found")
                await system.shutdown()
                return nil
            }
            devices.append(device)
        }
        self.devices = devices
    }
}
