public import ArgumentParser
import Coordination
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
#if SimulatedDevices
import LoopbackTransport
#endif
import MediaClock
import MediaRouteClient
import SystemRouting
import RoutingModel
import MediaDevice

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

            var members: [(name: String, route: SystemRoute, session: SystemRouteSession, control: any InterfaceControllable)] = []
            for name in names {
                let route = try await activate(name, pin: pin, discoverySeconds: 5, environment: environment, console: console)
                let session = SystemRouteSession(url: mediaURL, mode: .player)
                guard route.addSession(session) else { throw CommandFailure("\(route.routeDisplayName) is busy") }
                let media = try await session.start()
                // Through the daemon, CreateGroup holds the members itself, in order with the
                // group's Play; a pause sent from here would race it.
                if environment.daemon == nil { media.playbackControl.pause() }
                members.append((route.routeDisplayName, route, session, media.playbackControl))
            }
            console.write("Group of \(members.count): \(members.map(\.name).joined(separator: ", "))")
            let clock = SystemHostClock()
            let end = clock.now() + .seconds(double: seconds)
            if let daemon = environment.daemon {
                // Through mediarouted: the daemon keeps the group on its timeline (Group1);
                // this process only shows where each member stands.
                let group = try await daemon.createGroup(members.map(\.route.session))
                try await group.play()
                while clock.now() < end {
                    try? await clock.sleep(for: min(.milliseconds(500), end - clock.now()))
                    guard let properties = try? await group.properties(), properties.position >= 0, !properties.offsets.isEmpty else { continue }
                    var line = "  group at \(MediaRouteCommands.seconds(properties.position)):"
                    for member in members {
                        guard let offset = DaemonGroupRoute.offset(of: member.route.session, in: properties) else { continue }
                        line += "  \(member.name) \(milliseconds(offset)) ms"
                    }
                    console.write(line)
                }
                try? await group.end()
            } else {
                let group = CoordinatedGroup(itemID: mediaURL.absoluteString, clock: clock)
                for member in members { await group.add(member.name, control: member.control) }
                await group.seek(to: 0)
                await group.play()
                while clock.now() < end {
                    try? await clock.sleep(for: min(.milliseconds(500), end - clock.now()))
                    guard let expected = await group.expectedPosition() else { continue }
                    let offsets = await group.offsets
                    guard !offsets.isEmpty else { continue }
                    var line = "  group at \(MediaRouteCommands.seconds(expected)):"
                    for offset in offsets { line += "  \(offset.id) \(milliseconds(offset.offset)) ms" }
                    console.write(line)
                }
                await group.end()
            }
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
