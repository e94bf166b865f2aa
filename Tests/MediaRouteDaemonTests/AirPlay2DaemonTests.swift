import DBus
import Foundation
import MediaRouteBusAPI
import MediaRouteCommands
import MediaRouteTestSupport
import MediaRouteTesting
import Testing

/// mediarouted with an AirPlay-2-only receiver (the test receiver, announced as `_airplay._tcp`
/// alone in a network namespace, following PTP on 319/320 there as nqptp does), driven as a
/// person would: `mediaroutectl devices`, `stream FILE --to NAME`, `status --json`.
@Suite(.timeLimit(.minutes(2)), .enabled(if: NamespaceLab.isAvailable && PrivateBus.isAvailable && AirPlay2ReceiverPeer.available()), .serialized)
struct AirPlay2DaemonTests {
    @Test func mediaroutectlListsAndStreamsToAnAirPlay2OnlyReceiverThroughTheDaemon() async throws {
        let lab = try NamespaceLab(rooms: 1)
        let receiver = try AirPlay2ReceiverPeer(identifier: "4F:8A:22:10:9C:31", lab: lab, room: lab.rooms[0], name: "Loft AirPlay 2")
        let bus = try PrivateBus()
        // The daemon's PTP master binds 319/320 here (root in the tests; CAP_NET_BIND_SERVICE in its unit).
        let daemon = try ChildProcess([
            RunningDaemon.binary, "--bus", bus.address, "--lan", "on", "--lan-interfaces", lab.rooms[0].outside,
            "--adapters", "off", "--push-listen", "off", "--config", "/dev/null", "--log-level", "warning", "--state-dir", "off", "--airplay-latency", "1",
        ])
        let directory = NSTemporaryDirectory() + "mr-airplay2-daemon-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer {
            daemon.kill()
            daemon.wait()
            bus.stop()
            receiver.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }
        let connection = try await DBusConnection.connect(to: .address(bus.address))
        defer { connection.close() }
        #expect(await eventually(timeout: .seconds(10)) { (try? await connection.nameOwner(of: DaemonNames.busName)) ?? nil != nil })

        let listing = RecordingConsole()
        try await MediaRouteCtl.Devices.parse(["--bus", bus.address, "--seconds", "3", "--json"]).run(console: listing)
        let devices = try #require(try JSONSerialization.jsonObject(with: Data(listing.lines.joined(separator: "\n").utf8)) as? [[String: Any]], "\(listing.lines)")
        let loft = try #require(devices.first { $0["name"] as? String == "Loft AirPlay 2" }, "\(devices)")
        #expect(loft["available"] as? Bool == true && loft["unavailableReason"] == nil, "an AirPlay-2-only receiver is offered: \(loft)")
        #expect((loft["protocols"] as? [String])?.contains("AirPlay") == true, "\(loft)")

        let file = directory + "/tone.wav"
        try Data(wavBytes(stereoPCM: tone(seconds: 2))).write(to: URL(fileURLWithPath: file))
        let console = RecordingConsole()
        try await MediaRouteCtl.Stream.parse(["--bus", bus.address, file, "--to", "Loft AirPlay 2", "--keep"]).run(console: console)
        #expect(console.lines.last == "Ended.", "\(console.lines)")
        let status = RecordingConsole()
        try await MediaRouteCtl.Status.parse(["--json", "--bus", bus.address]).run(console: status)
        let report = try JSONSerialization.jsonObject(with: Data(status.lines.joined(separator: "\n").utf8)) as? [String: Any]
        let route = try #require((report?["routes"] as? [[String: Any]])?.first { $0["device"] as? String == "Loft AirPlay 2" }, "\(status.lines)")
        let details = route["details"] as? [String: Any]
        #expect(details?["protocolVersion"] as? String == "AirPlay 2" && details?["timing"] as? String == "ptp", "\(route)")
        try await MediaRouteCtl.Stop.parse(["--bus", bus.address, "--to", "Loft AirPlay 2"]).run(console: RecordingConsole())
        #expect(await eventually(timeout: .seconds(10)) { receiver.event("recording") != nil }, "\(receiver.events.suffix(5))")
        let recording = try #require(receiver.recording())
        expectToneIntact(recording.pcm, underruns: (route["audio"] as? [String: Any])?["underruns"] as? Int ?? 0, "\(recording.line)")
        #expect(receiver.event("paired")?["paired"] as? String == "transient")
        #expect(receiver.events.contains { $0["ptp"] != nil }, "the receiver followed the daemon's PTP master on 319/320")
    }
}
