import Coordination
import ExtensionCatalogue
import Foundation
import LANTransport
import MediaClock
import MediaDevice
import MediaRouteTestSupport
import MediaRouteTesting
import RAOPExtension
import RouteSystem
import RoutingModel
#if canImport(Glibc)
import Glibc
#endif

extension Bench {
    /// `airplay2-group [SECONDS]`: two shairport-sync 5 receivers (AirPlay 2, each with its own
    /// nqptp, built by hand: `MEDIAROUTE_SHAIRPORT_SYNC5`, `MEDIAROUTE_NQPTP`) in two namespaces,
    /// found over mDNS, played as one group with AirPlay 2 (transient pairing, PTP from our master
    /// on 319/320, real-time ALAC): the time from the first write to the first sound at each
    /// receiver, the offset between their outputs for each click of an impulse train (as
    /// `raop-group` measures AirPlay 1), and what each receiver logged of the stream's type.
    /// `--mixed`: the left receiver is Debian's shairport-sync 3 instead, played with AirPlay 1
    /// (NTP-style timing) in the same group as the AirPlay 2 one. `--buffered`: the AirPlay 2
    /// receivers get buffered AAC streams (`airplay2-buffered`) instead of real-time ALAC.
    /// `--delay MS --jitter MS [--both-ways]`: the second receiver's link delayed (`raop-group`'s
    /// NFQUEUE delayer). With `MEDIAROUTE_OWNTONE`, OwnTone plays to the same receivers after.
    static func airPlay2Group(arguments: [String]) async throws {
        let seconds = Int(arguments.first ?? "") ?? 60
        let mixed = arguments.contains("--mixed")
        let buffered = arguments.contains("--buffered")
        var link = LinkImpairment()
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--delay": link.delay = Double(rest.popFirst() ?? "") ?? 0
            case "--jitter": link.jitter = Double(rest.popFirst() ?? "") ?? 0
            case "--both-ways": link.bothWays = true
            default: break
            }
        }
        guard AirPlayReceiver.available, let build = AirPlayReceiver.AirPlay2Build.fromEnvironment() else { return }
        let lab = try NamespaceLab(rooms: 2)
        let leftName = mixed ? "Left AirPlay 1" : "Left AirPlay 2"
        let left = try AirPlayReceiver(in: lab, room: lab.rooms[0], name: leftName, timed: true, airPlay2: mixed ? nil : build)
        let right = try AirPlayReceiver(in: lab, room: lab.rooms[1], name: "Right AirPlay 2", timed: true, airPlay2: build)
        try link.apply(to: lab.rooms[1], in: lab)
        print("airplay2-group: \(link)")
        let timing = PTPTimingService(clock: SystemHostClock())
        let transport = DNSSDServiceTransport(
            lan: LANTransport(configuration: .init(interfaces: lab.rooms.map(\.outside))), serviceTypes: [RAOPExtension.serviceType, RAOPExtension.airPlayServiceType])
        let system = RouteSystem()
        let protocols: [String: AirPlayProtocolChoice] = buffered ? ["Left AirPlay 2": .airPlay2Buffered, "Right AirPlay 2": .airPlay2Buffered] : [:]
        try await system.load { manager in
            RAOPExtension(transport: transport, routingManager: manager, timing: PTPAirPlayTiming(service: timing), protocols: protocols)
        }
        await system.beginDiscovery(client: "bench")
        let names = [leftName, "Right AirPlay 2"]
        guard await eventually(timeout: .seconds(20), { await system.devicesList.filter { names.contains($0.displayName) }.count == 2 }) else {
            print("airplay2-group: the receivers were not found: \(await system.devicesList.map(\.displayName)); \(left.log.suffix(400))")
            return
        }
        var sessions: [MediaOutputSession] = []
        for name in names {
            guard let device = await system.devicesList.first(where: { $0.displayName == name }) else { return }
            do {
                let route = try await system.activate(deviceID: device.id)
                try await system.setVolume(1, on: route.session)
                sessions.append(route.session)
                let details = await system.routeStatus(on: route.session)?.details
                print("airplay2-group: \(name): \(details?.protocolVersion ?? "?"), timing \(details?.timing?.rawValue ?? "?")")
            } catch {
                print("airplay2-group: \(name) not activated: \(error); \(name == names[0] ? left.log.suffix(1500) : right.log.suffix(1500))")
                return
            }
        }
        let (acquisition, _) = try await system.acquireGroupAudio(on: sessions, format: .cdAudio)
        let descriptor = acquisition.descriptor
        let source = impulseTrain(seconds: seconds)
        let begun = SampleBuffer.clockNow()
        let writer = Task.detached {
            _ = writeBlocking(source, to: descriptor, piece: 4_096)
            close(descriptor)
        }
        // CPU of this process (delivery, FFmpeg's ALAC encoder, sealing each packet, RTP, PTP, and
        // the writer) over the middle of the stream, as a share of one core, for the two streams.
        try await Task.sleep(for: .seconds(3))
        let cpuBefore = processCPUSeconds()
        let measured = max(1, seconds - 6)
        try await Task.sleep(for: .seconds(measured))
        let cpu = processCPUSeconds() - cpuBefore
        print(String(format: "airplay2-group: two AirPlay 2 streams for %d s: MediaRoute %.2f %% of a core (%.2f %% a stream)",
                     measured, cpu / Double(measured) * 100, cpu / Double(measured) * 50))
        await writer.value
        try await Task.sleep(for: .seconds(6))
        // Write → play: when the third click (source frame 11 025 + 2 × 22 050) came out of each
        // receiver by its output's steady clock, less when it was written (the writer fills the
        // socket at once, then at delivery's pace: by the third click it writes as it plays). The
        // first second of shairport-sync's stdout comes in one burst, so earlier clicks say nothing.
        let begunSeconds = Double(begun.components.seconds) + Double(begun.components.attoseconds) / 1e18
        for (name, receiver) in zip(names, [left, right]) {
            let clicks = clickFrames(in: receiver.pcm)
            if clicks.count > 2, let played = receiver.output.clock()(clicks[2]) {
                print(String(format: "airplay2-group: %@: write → play at the third click %.1f ms (the route's latency: %.1f ms)",
                             name, (played - begunSeconds - 1.25) * 1000, Double(acquisition.latency.components.attoseconds) / 1e15 + Double(acquisition.latency.components.seconds) * 1000))
            }
        }
        for (name, receiver) in zip(names, [left, right]) {
            // What the receiver says it got: an AirPlay 2 PTP session and a real-time stream, timed by our master, never "Classic".
            let wanted = ["AP2 PTP connection", "Realtime Stream Play", "Buffered Stream", "buffered", "NQPTP master clock", "Classic", "classic", "rror"]
            let lines = receiver.log.split(separator: "\n").filter { line in wanted.contains { line.contains($0) } }
                .map { $0.split(separator: "\"").dropFirst(2).joined(separator: "\"").trimmingCharacters(in: .whitespaces) }
            print("airplay2-group: \(name)'s log: \(lines.prefix(5).joined(separator: " | ").prefix(600))")
        }
        if let statistics = timing.statistics { print("airplay2-group: PTP master: \(statistics)") }
        // Each click of one output paired with the other's nearest (within 50 ms): a receiver that
        // starts or ends a click apart from the other is still compared click by click.
        let (leftClock, rightClock) = (left.output.clock(), right.output.clock())
        let leftTimes = clickFrames(in: left.pcm).compactMap { leftClock($0) }
        let rightTimes = clickFrames(in: right.pcm).compactMap { rightClock($0) }
        let offsets = leftTimes.compactMap { time -> Double? in
            guard let nearest = rightTimes.min(by: { abs($0 - time) < abs($1 - time) }), abs(nearest - time) < 0.05 else { return nil }
            return (time - nearest) * 1000
        }
        print("airplay2-group: \(leftTimes.count) and \(rightTimes.count) clicks in the outputs, \(offsets.count) paired")
        guard offsets.count > 4 else {
            await system.shutdown()
            return
        }
        if ProcessInfo.processInfo.environment["MEDIAROUTE_BENCH_OFFSETS"] != nil { print("offsets (ms):", offsets.map { ($0 * 100).rounded() / 100 }) }
        report(mixed ? "MediaRoute → shairport-sync 3.3.8 (AirPlay 1) and 5.2.1 (AirPlay 2), one group"
               : buffered ? "MediaRoute → two shairport-sync 5.2.1 receivers, AirPlay 2 buffered AAC" : "MediaRoute → two shairport-sync 5.2.1 receivers, AirPlay 2",
               offsets, seconds: seconds)
        await system.shutdown()
        if !mixed, let ownTone = ProcessInfo.processInfo.environment["MEDIAROUTE_OWNTONE"] {
            try await ownToneAnchor(ownTone, lab: lab, receivers: (left, right), names: names, seconds: seconds)
        }
    }

    /// The anchor in the same run: OwnTone (built by hand, `MEDIAROUTE_OWNTONE` naming its
    /// `owntone` binary) plays the same impulse train, as a WAV file in its library, to the same
    /// two receivers over AirPlay 2, driven through its JSON API. It runs in a mount and PID
    /// namespace of its own with its own D-Bus system bus and Avahi on the rooms' links (it finds
    /// receivers through Avahi), and ends with them. Prints the same figures as MediaRoute's.
    static func ownToneAnchor(_ binary: String, lab: NamespaceLab, receivers: (AirPlayReceiver, AirPlayReceiver), names: [String], seconds: Int) async throws {
        let directory = TestScratch.directory + "/owntone"
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory + "/music", withIntermediateDirectories: true)
        // The impulse train as a 44.1 kHz stereo WAV.
        let pcm = impulseTrain(seconds: seconds)
        var wav = Array("RIFF".utf8)
        func word(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { wav.append(contentsOf: $0) } }
        func half(_ value: UInt16) { withUnsafeBytes(of: value.littleEndian) { wav.append(contentsOf: $0) } }
        word(UInt32(36 + pcm.count)); wav += Array("WAVEfmt ".utf8); word(16); half(1); half(2); word(44_100); word(44_100 * 4); half(4); half(16)
        wav += Array("data".utf8); word(UInt32(pcm.count)); wav += pcm
        try Data(wav).write(to: URL(fileURLWithPath: directory + "/music/clicks.wav"))
        try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig><type>system</type><listen>unix:path=\(directory)/system_bus</listen><auth>EXTERNAL</auth>
            <policy context="default"><allow send_destination="*"/><allow receive_sender="*"/><allow own="*"/><allow user="*"/></policy></busconfig>
            """.write(toFile: directory + "/bus.conf", atomically: true, encoding: .utf8)
        try """
            [server]
            host-name=owntone-bench
            use-ipv4=yes
            use-ipv6=no
            allow-interfaces=\(lab.rooms.map(\.outside).joined(separator: ","))
            enable-dbus=yes
            [publish]
            publish-hinfo=no
            publish-workstation=no
            """.write(toFile: directory + "/avahi.conf", atomically: true, encoding: .utf8)
        try """
            general {
                uid = "root"
                logfile = "\(directory)/owntone.log"
                loglevel = info
                db_path = "\(directory)/songs3.db"
                cache_dir = "\(directory)"
                ipv6 = no
                trusted_networks = { "any" }
                websocket_port = 0
            }
            library {
                name = "bench"
                port = 3689
                directories = { "\(directory)/music" }
            }
            audio { type = "disabled" }
            """.write(toFile: directory + "/owntone.conf", atomically: true, encoding: .utf8)
        let process = try ChildProcess([
            "/usr/bin/unshare", "-m", "-p", "-f", "--kill-child", "/bin/sh", "-c",
            "mkdir -p /run/avahi-daemon && mount -t tmpfs tmpfs /run/avahi-daemon && "
                + "/usr/bin/dbus-daemon --config-file=\(directory)/bus.conf --fork --nopidfile && sleep 0.3 && "
                + "(/usr/sbin/avahi-daemon --no-chroot --no-drop-root --no-rlimits -f \(directory)/avahi.conf >\(directory)/avahi.log 2>&1 &) && sleep 1 && "
                + "exec \(binary) -f -c \(directory)/owntone.conf --mdns-no-rsp --mdns-no-daap --mdns-no-web --mdns-no-cname >\(directory)/stdout.log 2>&1",
        ], environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(directory)/system_bus"])
        defer {
            process.kill(SIGKILL)
            process.wait()
        }
        func api(_ method: String, _ path: String, _ body: String? = nil) -> String {
            var arguments = ["/usr/bin/curl", "-s", "-m", "5", "-X", method, "http://127.0.0.1:3689" + path]
            if let body { arguments += ["-H", "Content-Type: application/json", "-d", body] }
            return (try? ChildProcess.run(arguments))?.output ?? ""
        }
        func json(_ text: String) -> [String: Any] { (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:] }
        // Its outputs (the two receivers, found over mDNS) and the file, scanned into its library.
        var outputs: [String] = []
        var track: Int?
        for _ in 0..<60 {
            let listed = (json(api("GET", "/api/outputs"))["outputs"] as? [[String: Any]]) ?? []
            outputs = listed.filter { names.contains(($0["name"] as? String) ?? "") }.compactMap { $0["id"] as? String }
            track = ((json(api("GET", "/api/search?type=tracks&query=clicks"))["tracks"] as? [String: Any])?["items"] as? [[String: Any]])?.first?["id"] as? Int
            if outputs.count == 2, track != nil { break }
            try await Task.sleep(for: .milliseconds(500))
        }
        guard outputs.count == 2, let track else {
            let log = (try? String(contentsOfFile: directory + "/owntone.log", encoding: .utf8)) ?? ""
            print("owntone: outputs \(outputs), track \(String(describing: track)); its log: \(log.suffix(1200))")
            return
        }
        let starts = [receivers.0.pcm.count / 4, receivers.1.pcm.count / 4]
        _ = api("PUT", "/api/outputs/set", "{\"outputs\": [\"\(outputs[0])\", \"\(outputs[1])\"]}")
        _ = api("PUT", "/api/player/volume?volume=100")
        let cpuBefore = try? String(contentsOfFile: "/proc/\(process.pid)/stat", encoding: .utf8)
        _ = cpuBefore
        let begun = SampleBuffer.clockNow()
        _ = api("POST", "/api/queue/items/add?uris=library:track:\(track)&clear=true&playback=start")
        try await Task.sleep(for: .seconds(seconds + 5))
        _ = api("PUT", "/api/player/stop")
        try await Task.sleep(for: .seconds(2))
        let log = (try? String(contentsOfFile: directory + "/owntone.log", encoding: .utf8)) ?? ""
        let wanted = log.split(separator: "\n").filter { $0.contains("PTP") || $0.contains("pair") || $0.contains("AirPlay 2") || $0.contains("rror") }
        print("owntone: its log: \(wanted.suffix(8).joined(separator: " | ").prefix(900))")
        let begunSeconds = Double(begun.components.seconds) + Double(begun.components.attoseconds) / 1e18
        let (leftClock, rightClock) = (receivers.0.output.clock(), receivers.1.output.clock())
        let leftClicks = clickFrames(in: receivers.0.pcm).filter { $0 >= starts[0] }, rightClicks = clickFrames(in: receivers.1.pcm).filter { $0 >= starts[1] }
        for (name, (clicks, clock)) in zip(names, [(leftClicks, leftClock), (rightClicks, rightClock)]) {
            if clicks.count > 2, let played = clock(clicks[2]) {
                print(String(format: "owntone: %@: play command → the third click %.1f ms", name, (played - begunSeconds - 1.25) * 1000))
            }
        }
        let leftTimes = leftClicks.compactMap(leftClock), rightTimes = rightClicks.compactMap(rightClock)
        let offsets = leftTimes.compactMap { time -> Double? in
            guard let nearest = rightTimes.min(by: { abs($0 - time) < abs($1 - time) }), abs(nearest - time) < 0.05 else { return nil }
            return (time - nearest) * 1000
        }
        print("owntone: \(leftTimes.count) and \(rightTimes.count) clicks in the outputs, \(offsets.count) paired")
        if offsets.count > 4 { report("OwnTone 29.3 → the same two shairport-sync 5.2.1 receivers, AirPlay 2", offsets, seconds: seconds) }
    }
}
