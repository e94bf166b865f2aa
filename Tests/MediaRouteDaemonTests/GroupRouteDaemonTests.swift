import DBus
import Foundation
import MediaDevice
import RoutingModel
import MediaRouteBusAPI
import MediaRouteClient
import MediaRouteCommands
import MediaRouteTestSupport
import SystemRouting
import Testing
import MediaRouteTesting

/// Group routes kept by the daemon (`Manager1.CreateGroup`, `org.mediaroute.Group1`): two
/// simulated TVs playing one URL on one timeline, members leaving and joining.
@Suite(.timeLimit(.minutes(1)), .enabled(if: PrivateBus.isAvailable), .serialized) struct GroupRouteDaemonTests {
    static func daemonWithTwoTVs() async throws -> RunningDaemon {
        try await RunningDaemon.with(scenario: #"""
            {"devices": [
              {"name": "den", "displayName": "Den TV", "kind": "tv"},
              {"name": "bedroom", "displayName": "Bedroom TV", "kind": "tv"}
            ]}
            """#)
    }

    @Test func mediaroutectlGroupPlaysAURLOnTwoTVsThroughTheDaemon() async throws {
        let daemon = try await Self.daemonWithTwoTVs()
        let console = RecordingConsole()
        try await MediaRouteCtl.Group.parse([
            "http://media.example/film.mp4", "--to", "Den TV", "--to", "Bedroom TV", "--seconds", "2.5", "--bus", daemon.bus.address,
        ]).run(console: console)
        #expect(console.lines.contains("Group of 2: Den TV, Bedroom TV"), "\(console.lines)")
        let reports = console.lines.filter { $0.hasPrefix("  group at") }
        #expect(reports.count >= 3, "\(console.lines)")
        // "  group at 0:01.0:  Den TV -0.8 ms  Bedroom TV -0.7 ms", the offsets read from the daemon.
        let last = try #require(reports.last)
        let numbers = last.split(separator: " ").enumerated().compactMap { index, word -> Double? in
            index > 0 && last.split(separator: " ")[index - 1] != "at" ? Double(word) : nil
        }
        #expect(numbers.count == 2 && numbers.allSatisfy { abs($0) < 100 }, "within 100 ms of the group: \(reports)")
        #expect(console.lines.last == "Group stopped.")
    }

    @Test func aMemberLeavesAndJoinsAGroupRouteWhileItPlays() async throws {
        let daemon = try await Self.daemonWithTwoTVs()
        let (_, backend, controller) = try await client(daemon, agent: ScriptedPairingAgent([]))
        let picker = controller.makePicker(prioritizesVideoDevices: true)
        await picker.open()
        #expect(await eventually { await picker.entries().count == 2 })
        var routes: [SystemRoute] = []
        for name in ["Den TV", "Bedroom TV"] {
            let route = try await picker.pick(try #require(await picker.entries().first { $0.displayName == name }))
            let session = SystemRouteSession(url: URL(string: "http://media.example/film.mp4")!, mode: .player)
            #expect(route.addSession(session))
            _ = try await session.start()
            routes.append(route)
        }
        await picker.close()
        let group = try await backend.createGroup(routes.map(\.session))
        #expect(try await group.properties().members == routes.map { DaemonNames.sessionPath($0.session) })
        #expect(try await group.properties().position == -1, "paused until Play")
        // The daemon holds the members itself (a client's own pause, sent from its background
        // command task, once lost the race against Play and left a member paused in a playing group).
        let members = routes
        #expect(await eventually {
            members.allSatisfy { $0.currentSession?.mediaSession?.playbackControl.playbackState == .paused }
        }, "the members are held until Play")
        try await group.play()
        #expect(await eventually(timeout: .seconds(5)) { ((try? await group.properties())?.position ?? -1) > 0.5 })
        // Offsets are measured on each correction (every 0.5 s): the first pass may not have
        // reported both members yet when the position passes 0.5 s.
        #expect(await eventually(timeout: .seconds(3)) { (try? await group.properties())?.offsets.count == 2 })
        let playing = try await group.properties()
        #expect(playing.offsets.count == 2 && playing.offsets.values.allSatisfy { abs($0) < 0.1 }, "\(playing.offsets)")

        // Bedroom leaves: it is no longer corrected or reported; Den plays on.
        try await group.remove(routes[1].session)
        let left = try await group.properties()
        #expect(left.members == [DaemonNames.sessionPath(routes[0].session)])
        await #expect(throws: MediaDeviceError.self) { try await group.remove(routes[1].session) }
        // It comes back, behind: the group moves it into place.
        routes[1].currentSession?.mediaSession?.playbackControl.seek(to: 0)
        try await group.add(routes[1].session)
        #expect(await eventually(timeout: .seconds(5)) {
            guard let properties = try? await group.properties(), properties.offsets.count == 2 else { return false }
            return properties.offsets.values.allSatisfy { abs($0) < 0.03 }
        })
        let rejoined = try await group.properties()
        #expect(rejoined.members.count == 2 && rejoined.offsets.values.allSatisfy { abs($0) < 0.03 }, "\(rejoined)")

        // A route whose session plays another URL cannot join; nor can a path that is no route.
        await #expect(throws: MediaDeviceError.self) { _ = try await backend.createGroup([]) }
        try await group.end()
        await #expect(throws: (any Error).self) { _ = try await group.properties() }
    }
}
