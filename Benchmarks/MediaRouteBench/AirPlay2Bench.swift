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
    static func airPlay2Group(arguments: [String]) async throws {
        let seconds = Int(arguments.first ?? "") ?? 60
        let mixed = arguments.contains("--mixed")
        let buffered = arguments.contains("--buffered")
        guard AirPlayReceiver.available, let build = AirPlayReceiver.AirPlay2Build.fromEnvironment() else { return }
        let lab = try NamespaceLab(rooms: 2)
        let leftName = mixed ? "Left AirPlay 1" : "Left AirPlay 2"
        let left = try AirPlayReceiver(in: lab, room: lab.rooms[0], name: leftName, timed: true, airPlay2: mixed ? nil : build)
        let right = try AirPlayReceiver(in: lab, room: lab.rooms[1], name: "Right AirPlay 2", timed: true, airPlay2: build)
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
    }
}
