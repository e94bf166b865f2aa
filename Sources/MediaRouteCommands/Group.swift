import ArgumentParser
import Coordination
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if SimulatedDevices
import LoopbackTransport
#endif
import MediaClock
import SystemRouting

extension MediaRouteCtl {
    /// Plays one URL on several devices in step and shows how far each one is from the group.
    public struct Group: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(
            abstract: "Play a URL on several devices at once, in sync, and show each one's offset live.",
            discussion: "Without --to, a development build runs on a built-in pair of simulated TVs.")

        @OptionGroup public var common: CommonOptions
        @Argument(help: "The media URL.") public var url: String
        @Option(name: .customLong("to"), help: "A device's name (repeat for each device; two or more).")
        public var devices: [String] = []
        @Option(help: "The pairing code, if a device asks for one.") public var pin: String?
        @Option(help: "How long to play, in seconds.") public var seconds: Double = 3

        public init() {}

        public func run() async throws { try await run(console: StandardConsole()) }

        public func run(console: any Console) async throws {
            guard let mediaURL = URL(string: url), mediaURL.scheme != nil else { throw CommandFailure("\"\(url)\" is not a URL") }
            var options = common
            #if SimulatedDevices
            if devices.isEmpty && options.bus == nil {
                // Without --to: the built-in pair of simulated TVs.
                options.simulate = true
                if options.scenario == nil { options.builtInScenario = .groupDemo }
            }
            #else
            if devices.isEmpty { throw CommandFailure("a group needs two or more devices (--to A --to B)") }
            #endif
            let names = devices.isEmpty ? ["Den TV", "Bedroom TV"] : devices
            guard names.count >= 2 else { throw CommandFailure("a group needs two or more devices (--to A --to B)") }
            let environment = try await options.environment(console: console)

            var members: [(name: String, route: SystemRoute, session: SystemRouteSession, control: PlaybackControl)] = []
            for name in names {
                let route = try await activate(name, pin: pin, discoverySeconds: 5, environment: environment, console: console)
                let session = SystemRouteSession(url: mediaURL, mode: .player)
                guard route.addSession(session) else { throw CommandFailure("\(route.routeDisplayName) is busy") }
                let media = try await session.start()
                media.playbackControl.pause()
                members.append((route.routeDisplayName, route, session, media.playbackControl))
            }
            let clock = SystemHostClock()
            let medium = LoopbackCoordinationMedium(clock: clock)
            var coordinators: [PlaybackCoordinator] = []
            for member in members {
                let coordinator = PlaybackCoordinator(
                    participant: ParticipantID(member.name), itemID: mediaURL.absoluteString, playback: member.control,
                    medium: medium, clock: clock)
                await coordinator.start()
                coordinators.append(coordinator)
            }
            console.write("Group of \(members.count): \(members.map(\.name).joined(separator: ", "))")
            await coordinators[0].seek(to: 0)
            await coordinators[0].play()

            let corrector = DriftCorrector()
            // Right after the start, a device that joined late (its play command
            // arrived late on a busy box) is moved into place at once: a trim at
            // ≤ 500 ppm would take minutes to remove tens of milliseconds.
            var joining = DriftCorrector()
            joining.hardResync = 0.020
            let settleUntil = clock.now() + .seconds(1)
            let end = clock.now() + .seconds(double: seconds)
            while clock.now() < end {
                try? await clock.sleep(for: min(.milliseconds(500), end - clock.now()))
                guard let expected = await coordinators[0].expectedItemTime(atHostTime: clock.now().seconds) else { continue }
                var line = "  group at \(MediaRouteCommands.seconds(expected)):"
                for member in members {
                    let offset = member.control.currentPlaybackPosition - expected
                    let policy = clock.now() <= settleUntil ? joining : corrector
                    switch policy.correction(position: member.control.currentPlaybackPosition, expected: expected, groupRate: 1) {
                    case .trim(let rate): member.control.playbackSpeed = rate
                    case .seek(let target): member.control.seek(to: target)
                    case .none(let rate): if member.control.playbackSpeed != rate { member.control.playbackSpeed = rate }
                    }
                    line += "  \(member.name) \(milliseconds(offset)) ms"
                }
                console.write(line)
            }
            for coordinator in coordinators { await coordinator.stop() }
            for member in members { await endRoute(member.route, environment: environment) }
            console.write("Group stopped.")
            await environment.shutdown()
        }
    }
}

/// A signed number of milliseconds with one decimal, e.g. "+1.2" or "-0.4".
func milliseconds(_ seconds: Double) -> String {
    let tenths = Int((seconds * 10_000).rounded())
    return "\(tenths < 0 ? "-" : "+")\(abs(tenths) / 10).\(abs(tenths) % 10)"
}
