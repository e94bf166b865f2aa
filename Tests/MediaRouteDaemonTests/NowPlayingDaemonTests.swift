import DBus
import Foundation
import MediaRouteBusAPI
import MediaRouteCommands
import MediaRouteTestSupport
import Testing
import MediaRouteTesting

/// The daemon's Now Playing: routed sessions in MPRIS, pushes through its endpoint.
@Suite(
    .timeLimit(.minutes(1)),
    .enabled(if: PrivateBus.isAvailable && FileManager.default.isExecutableFile(atPath: "/usr/bin/playerctl")))
struct NowPlayingDaemonTests {
    static let mpris = "org.mpris.MediaPlayer2.mediaroute"

    func playerctl(_ daemon: RunningDaemon, _ arguments: String...) async throws -> String {
        let result = try await ChildProcess.runOffPool(
            ["/usr/bin/playerctl", "-p", "mediaroute"] + arguments, environment: ["DBUS_SESSION_BUS_ADDRESS": daemon.bus.address])
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func aTVStartedWithMediaroutectlShowsInMPRISAndObeysIt() async throws {
        let daemon = try await RunningDaemon()
        defer { _ = daemon.stop() }
        #expect(try await playerctl(daemon, "status") == "Stopped")
        let play = RecordingConsole()
        try await MediaRouteCtl.Play.parse([
            "http://m/x.mp4", "--to", "Living Room TV", "--pin", "1234", "--seconds", "0.2", "--keep", "--bus", daemon.bus.address,
        ]).run(console: play)
        #expect(await eventually { (try? await playerctl(daemon, "status")) == "Playing" })
        #expect(try await playerctl(daemon, "metadata", "mpris:length") == "600000000")  // the standard scenario's media: 600 s
        _ = try await playerctl(daemon, "pause")
        #expect(await eventually { (try? await playerctl(daemon, "status")) == "Paused" })
        _ = try await playerctl(daemon, "position", "30")
        #expect(await eventually { (try? await playerctl(daemon, "position")).flatMap(Double.init).map { abs($0 - 30) < 0.5 } ?? false })
        try await MediaRouteCtl.Stop.parse(["--to", "Living Room TV", "--bus", daemon.bus.address]).run(console: RecordingConsole())
        #expect(await eventually { (try? await playerctl(daemon, "status")) == "Stopped" })
    }

    @Test func aServerStartsASessionThroughThePushEndpointAndGetsItsCommands() async throws {
        let daemon = try await RunningDaemon()
        defer { _ = daemon.stop() }
        let endpoint = try await daemon.gdbus([
            "--object-path", "/org/mediaroute/push", "--method", "org.freedesktop.DBus.Properties.Get", "org.mediaroute.Push1", "Endpoint",
        ])
        let port = try #require(endpoint.split(separator: ":").last.flatMap { Int($0.prefix { $0.isNumber }) })
        let tokenReply = try await daemon.gdbus(["--object-path", "/org/mediaroute/push", "--method", "org.mediaroute.Push1.GetPushToStartToken"])
        let token = tokenReply.filter { $0.isHexDigit }
        #expect(token.count == 64)

        let connection = try await DBusConnection.connect(to: .address(daemon.bus.address))
        defer { connection.close() }
        let commands = try await connection.signals(matching: DBusMatchRule(interface: "org.mediaroute.Push1", member: "CommandRequested"))

        let started = try await RawHTTP.post(port: port, body: SeedPayloads.start, token: token)
        #expect(started.status == 200, "\(started.body)")
        #expect(await eventually { (try? await playerctl(daemon, "metadata", "title")) == "Song Title" })
        #expect(try await playerctl(daemon, "metadata", "artist") == "Name of Artist")
        _ = try await playerctl(daemon, "next")
        var iterator = commands.makeAsyncIterator()
        let signal = try #require(await iterator.next())
        #expect(signal.body.first?.string == "A1B2C3D4-E5F6-7890-ABCD-EF1234567890")
        #expect(signal.body.dropFirst().first?.string == "nextTrack")

        let updateToken = try #require(try JSONDecoder().decode([String: String].self, from: Data(started.body.utf8))["updateToken"])
        #expect(try await RawHTTP.post(port: port, body: SeedPayloads.update, token: updateToken).status == 200)
        #expect(await eventually { (try? await playerctl(daemon, "metadata", "mpris:length")) == "312000000" })
        #expect(try await RawHTTP.post(port: port, body: SeedPayloads.update, token: token).status == 403)
        #expect(try await RawHTTP.post(port: port, body: SeedPayloads.end, token: updateToken).status == 200)
        #expect(await eventually { (try? await playerctl(daemon, "status")) == "Stopped" })
    }
}
