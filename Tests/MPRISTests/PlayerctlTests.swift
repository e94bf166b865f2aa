import DBus
import Foundation
import MPRIS
import MediaRouteTestSupport
import NowPlaying
import Testing
import MediaRouteTesting

@Suite(.serialized, .timeLimit(.minutes(1)))
struct PlayerctlTests {
    static let available: Bool = {
        guard PrivateBus.isAvailable else { return false }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/playerctl") else {
            print("skipping: /usr/bin/playerctl is not installed (apt-get install playerctl)")
            return false
        }
        return true
    }()

    struct Rig {
        let bus: PrivateBus
        let connection: DBusConnection
        let center: NowPlayingCenter
        let ext: SpeakerExtension
        let bridge: MPRISBridge
        let session: RemoteMediaSession<SpeakerAttributes>

        var environment: [String: String] { ["DBUS_SESSION_BUS_ADDRESS": bus.address] }

        func playerctl(_ arguments: String...) async throws -> String {
            let result = try await ChildProcess.runOffPool(["/usr/bin/playerctl", "-p", "mediaroute"] + arguments, environment: environment)
            return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        func property(_ name: String, interface: String = MPRISNames.player) async throws -> DBusValue {
            let reply = try await connection.call(
                destination: MPRISNames.defaultBusName, path: MPRISNames.objectPath, interface: "org.freedesktop.DBus.Properties",
                member: "Get", [.string(interface), .string(name)])
            return try #require(reply.first).unwrapped
        }

        func set(_ name: String, _ value: DBusValue) async throws {
            _ = try await connection.call(
                destination: MPRISNames.defaultBusName, path: MPRISNames.objectPath, interface: "org.freedesktop.DBus.Properties",
                member: "Set", [.string(MPRISNames.player), .string(name), .variant(value)])
        }

        func stop() async {
            await bridge.stop()
            connection.close()
            bus.stop()
        }
    }

    func withRig(_ attributes: SpeakerAttributes = .sample(), _ body: (Rig) async throws -> Void) async throws {
        guard Self.available else { return }
        let bus = try PrivateBus()
        let connection = try await DBusConnection.connect(to: .address(bus.address))
        let center = NowPlayingCenter()
        let ext = SpeakerExtension()
        try await center.register(ext)
        let session = try await RemoteMediaSession.start(attributes: attributes, in: center)
        let bridge = MPRISBridge(center: center, connection: connection)
        try await bridge.start()
        let rig = Rig(bus: bus, connection: connection, center: center, ext: ext, bridge: bridge, session: session)
        // The bridge learns of the session from the center's events, a moment after it starts:
        // a command sent before it shows the session would find no session to act on.
        _ = await eventually { "\(String(describing: try? await rig.property("Metadata")))".contains("/org/mediaroute/track/S1") }
        do {
            try await body(rig)
        } catch {
            await rig.stop()
            throw error
        }
        await rig.stop()
    }

    @Test func listsTheMetadataAndStatus() async throws {
        try await withRig { rig in
            let players = try await ChildProcess.runOffPool(["/usr/bin/playerctl", "-l"], environment: rig.environment).output
            #expect(players.split(separator: "\n").contains("mediaroute"))
            let metadata = try await rig.playerctl("metadata", "--format", "{{title}}|{{artist}}|{{album}}|{{mpris:length}}|{{mpris:trackid}}")
            #expect(metadata == "Song Title|Name of Artist|Title of the Album|237000000|'/org/mediaroute/track/S1/track_2d1'")  // playerctl quotes object paths
            #expect(try await rig.playerctl("status") == "Playing")
            #expect(try await rig.property("CanGoNext") == .bool(true))
            #expect(try await rig.property("CanGoPrevious") == .bool(false))  // first track
            #expect(try await rig.property("CanSeek") == .bool(true))
            #expect(try await rig.property("CanControl") == .bool(true))
            #expect(try await rig.property("Volume") == .double(Double(Float(0.65))))
            #expect(try await rig.property("Identity", interface: MPRISNames.root) == .string("MediaRoute"))
        }
    }

    @Test func commandsFromPlayerctlReachTheSession() async throws {
        try await withRig { rig in
            _ = try await rig.playerctl("play-pause")
            _ = try await rig.playerctl("next")
            _ = try await rig.playerctl("position", "30")
            _ = try await rig.playerctl("position", "10+")
            _ = try await rig.playerctl("volume", "0.8")
            let calls = rig.ext.calls.value
            #expect(calls.count == 5, "\(calls)")
            guard calls.count == 5 else { return }
            #expect(calls[0] == .command("pause"))  // playing: the toggle pauses
            #expect(calls[1] == .command("next"))
            #expect(calls[2] == .seek(30))
            // The fake device does not move on seeks: +10 from where the clock puts it (≈ 0 s in).
            guard case .seek(let relative) = calls[3] else { Issue.record("not a seek: \(calls[3])"); return }
            #expect(relative >= 10 && relative < 15)
            #expect(calls[4] == .volume(0.8))
        }
    }

    @Test func rateZeroPausesVolumeClampsAndStaleTrackIDsAreIgnored() async throws {
        try await withRig { rig in
            try await rig.set("Rate", .double(0))
            try await rig.set("Volume", .double(-0.5))
            await #expect(throws: DBusError.self) { try await rig.set("Rate", .double(7)) }
            _ = try await rig.connection.call(
                destination: MPRISNames.defaultBusName, path: MPRISNames.objectPath, interface: MPRISNames.player, member: "SetPosition",
                [.objectPath("/org/mediaroute/track/S1/old"), .int64(5_000_000)])
            _ = try await rig.connection.call(
                destination: MPRISNames.defaultBusName, path: MPRISNames.objectPath, interface: MPRISNames.player, member: "SetPosition",
                [.objectPath("/org/mediaroute/track/S1/track_2d1"), .int64(500_000_000)])  // past the end
            #expect(rig.ext.calls.value == [.command("pause"), .volume(0)])
            // The extras: per-device volume and language options.
            _ = try await rig.connection.call(
                destination: MPRISNames.defaultBusName, path: MPRISNames.objectPath, interface: MPRISNames.extras, member: "SetDeviceVolume",
                [.string("living-room-speaker"), .double(0.25)])
            _ = try await rig.connection.call(
                destination: MPRISNames.defaultBusName, path: MPRISNames.objectPath, interface: MPRISNames.extras, member: "EnableLanguageOption",
                [.string("en")])
            await #expect(throws: DBusError.self) {
                _ = try await rig.connection.call(
                    destination: MPRISNames.defaultBusName, path: MPRISNames.objectPath, interface: MPRISNames.extras,
                    member: "DisableLanguageOption", [.string("fr")])
            }
            #expect(rig.ext.calls.value == [.command("pause"), .volume(0), .volume(0.25), .language("en", true)])
        }
    }

    @Test func flagsFollowTheCommandsAndTheSessionEnd() async throws {
        try await withRig(.sample(index: 4)) { rig in
            #expect(try await rig.property("CanGoNext") == .bool(false))  // last of 5
            #expect(try await rig.property("CanGoPrevious") == .bool(true))
            try await rig.session.update(.sample(index: 2))
            #expect(await eventually { (try? await rig.property("CanGoNext")) == .bool(true) })
            try await rig.session.end()
            #expect(await eventually { (try? await rig.property("PlaybackStatus")) == .string("Stopped") })
            for flag in ["CanGoNext", "CanGoPrevious", "CanPlay", "CanPause", "CanSeek", "CanControl"] {
                #expect(try await rig.property(flag) == .bool(false), "\(flag)")
            }
            let metadata = try await rig.property("Metadata")
            #expect(metadata == .properties(["mpris:trackid": .objectPath(MPRISNames.noTrack)]))
        }
    }

    @Test func aFollowerSeesSeeksAndNewTitlesAtOnce() async throws {
        try await withRig { rig in
            let follower = try LineCollector(
                ["/usr/bin/playerctl", "-p", "mediaroute", "-F", "metadata", "--format", "{{title}} {{position}}"], environment: rig.environment)
            defer { follower.stop() }
            #expect(await eventually { follower.lines.value.contains { $0.1.hasPrefix("Song Title") } })

            // A new title from the device: within 100 ms of the update.
            let updated = ContinuousClock.now
            try await rig.session.update(.sample(title: "Second Song", index: 1))
            #expect(await eventually { follower.first(after: updated) { $0.hasPrefix("Second Song") } != nil })
            if let (arrived, _) = follower.first(after: updated, where: { $0.hasPrefix("Second Song") }) {
                #expect(arrived - updated < .milliseconds(100), "new title after \(arrived - updated)")
            }

            // A jump in position (the device seeked to 100 s): Seeked, and the follower prints it.
            let seeked = ContinuousClock.now
            try await rig.session.update(.sample(title: "Second Song", index: 1, elapsed: 100))
            #expect(await eventually {
                follower.first(after: seeked) { line in
                    guard let value = line.split(separator: " ").last.flatMap({ Int64($0) }) else { return false }
                    return value >= 100_000_000
                } != nil
            })
            if let (arrived, _) = follower.first(after: seeked, where: { ($0.split(separator: " ").last.flatMap { Int64($0) } ?? 0) >= 100_000_000 }) {
                #expect(arrived - seeked < .milliseconds(100), "seek after \(arrived - seeked)")
            }
        }
    }
}
