import ArgumentParser
import LANTransport
import DBus
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import LoopbackTransport
import MediaClock
import SystemRouting

/// `mediaroutectl`: find, pick and play on TVs and speakers.
@available(macOS 15, *)
public struct MediaRouteCtl: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "mediaroutectl",
        abstract: "Find TVs and speakers, pair, play and control them.",
        subcommands: [Devices.self, Pick.self, Play.self, Volume.self, Mute.self, Stop.self, Status.self, Group.self, Demo.self])

    public init() {}
}

/// Options every command shares.
public struct CommonOptions: ParsableArguments {
    @Option(name: .long, help: "A loopback scenario JSON file (default: the built-in TV and speaker).")
    public var scenario: String?

    @Flag(name: .long, help: "Log debug details to standard error.")
    public var verbose = false

    @Option(name: .long, help: "Talk to mediarouted on this bus: system, session, or a D-Bus address. Without it, or when no daemon runs there, the routing system runs in this process.")
    public var bus: String?

    @Flag(name: .long, help: "In this process: also find UPnP/DLNA renderers (TVs, speakers) on the LAN.")
    public var lan = false

    @Option(name: .customLong("lan-interface"), help: "Search for renderers only on this interface (repeatable; implies --lan).")
    public var lanInterfaces: [String] = []

    @Option(name: .customLong("lan-host"), help: "Also search this renderer's IPv4 address by unicast (repeatable; implies --lan).")
    public var lanHosts: [String] = []

    /// The LAN discovery asked for, if any.
    var lanConfiguration: LANTransport.Configuration? {
        guard lan || !lanInterfaces.isEmpty || !lanHosts.isEmpty else { return nil }
        return LANTransport.Configuration(
            manualHosts: lanHosts, interfaces: lanInterfaces.isEmpty ? nil : lanInterfaces,
            browsedServiceTypes: LANTransport.discoveryOnlyServiceTypes)
    }

    /// The scenario used when no file is given (a command may choose another built-in one).
    var builtInScenario: LoopbackScenario = .standard

    public init() {}

    func environment(console: any Console, allowDaemon: Bool = true) async throws -> RoutingEnvironment {
        var logger = Logger(label: "mediaroutectl")
        logger.logLevel = verbose ? .debug : .critical
        if let bus, allowDaemon {
            let target: DBusConnection.Bus = switch bus {
            case "system": .system
            case "session": .session
            default: .address(bus)
            }
            do {
                return try await RoutingEnvironment.daemon(on: target, logger: logger)
            } catch {
                console.write("mediarouted is not reachable on the \(bus) bus (\(error)); running in-process instead.")
            }
        }
        let scenario: LoopbackScenario
        do {
            scenario = try self.scenario.map(LoopbackScenario.load(fromFile:)) ?? builtInScenario
        } catch {
            throw CommandFailure("\(error)")
        }
        return try await RoutingEnvironment.inProcess(scenario: scenario, lan: lanConfiguration, logger: logger)
    }
}

/// A failure reported as one line and a non-zero exit code.
public struct CommandFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

func percent(_ level: Float) -> String { "\(Int((level * 100).rounded()))%" }

func seconds(_ value: Double) -> String {
    let total = Int(value.rounded(.down))
    let fraction = Int(((value - Double(total)) * 10).rounded(.down))
    return "\(total / 60):\(String(repeating: "0", count: total % 60 < 10 ? 1 : 0))\(total % 60).\(fraction)"
}

/// Discovers, then activates the device named `name`, pairing with `pin` or a prompt.
func activate(
    _ name: String, pin: String?, discoverySeconds: Double, environment: RoutingEnvironment, console: any Console
) async throws -> SystemRoute {
    await environment.controller.setPairingAgent(ConsolePairingAgent(console: console, pin: pin))
    let matches: @Sendable (RoutePickerEntry) -> Bool = { $0.displayName.lowercased() == name.lowercased() || $0.id == name }
    let entries = await environment.discover(seconds: discoverySeconds, until: { $0.contains(where: matches) })
    guard let entry = entries.first(where: matches) else {
        let known = entries.map(\.displayName).joined(separator: ", ")
        throw CommandFailure("no device named \"\(name)\" found (found: \(known.isEmpty ? "none" : known))")
    }
    // With a daemon the device may already be active (a route kept from an earlier command).
    if let existing = environment.controller.routes.first(where: { $0.routeDisplayName == entry.displayName }) {
        return existing
    }
    do {
        return try await environment.controller.activate(deviceNamed: entry.id)
    } catch let error as MediaDeviceError {
        throw CommandFailure("cannot activate \(entry.displayName): \(error)")
    }
}

extension MediaRouteCtl {
    /// Lists the devices found in a few seconds.
    public struct Devices: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(abstract: "List the devices found in a few seconds.")

        @OptionGroup public var common: CommonOptions
        @Option(help: "How long to discover, in seconds.") public var seconds: Double = 1
        @Flag(help: "Print JSON.") public var json = false

        public init() {}

        public func run() async throws { try await run(console: StandardConsole()) }

        public func run(console: any Console) async throws {
            guard seconds > 0, seconds <= 300 else { throw CommandFailure("--seconds must be between 0 and 300") }
            let environment = try await common.environment(console: console)
            let showProgress = !json && seconds >= 2
            let entries = await environment.discover(seconds: seconds) { count in
                if showProgress { console.write("  … \(count) device(s) so far") }
            }
            if json {
                struct Row: Encodable {
                    let id, name, type: String
                    let protocols: [String]
                    let state: String
                }
                let rows = entries.map {
                    Row(id: $0.id, name: $0.displayName, type: $0.deviceType.rawValue,
                        protocols: $0.protocolDisplayNames, state: $0.state.rawValue)
                }
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                console.write(String(decoding: try encoder.encode(rows), as: UTF8.self))
            } else if entries.isEmpty {
                console.write("No devices found.")
            } else {
                for (index, entry) in entries.enumerated() {
                    console.write("\(index + 1). \(entry.displayName)  [\(entry.deviceType.rawValue), \(entry.protocolDisplayNames.joined(separator: " + "))]")
                }
            }
            await environment.shutdown()
        }
    }

    /// Plays a URL on a device.
    public struct Play: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(abstract: "Play a URL on a device.")

        @OptionGroup public var common: CommonOptions
        @Argument(help: "The media URL, or a local file (served to the device while it plays).") public var url: String
        @Option(help: "The device's name.") public var to: String
        @Option(help: "The pairing code, if the device asks for one.") public var pin: String?
        @Option(help: "How long to let it play before stopping, in seconds.") public var seconds: Double = 3
        @Flag(help: "With mediarouted (--bus): leave it playing when the command ends.") public var keep = false

        public init() {}

        public func run() async throws { try await run(console: StandardConsole()) }

        public func run(console: any Console) async throws {
            let mediaURL: URL
            if let parsed = URL(string: url), parsed.scheme != nil {
                mediaURL = parsed
            } else if FileManager.default.fileExists(atPath: url) {
                let absolute = url.hasPrefix("/") ? url : FileManager.default.currentDirectoryPath + "/" + url
                mediaURL = URL(fileURLWithPath: absolute)
            } else {
                throw CommandFailure("\"\(url)\" is neither a URL nor a file")
            }
            let environment = try await common.environment(console: console)
            let route = try await activate(to, pin: pin, discoverySeconds: 5, environment: environment, console: console)
            let session = SystemRouteSession(url: mediaURL, mode: .player)
            guard route.addSession(session) else { throw CommandFailure("\(route.routeDisplayName) is busy") }
            let media: SystemRouteMediaSession
            do {
                media = try await session.start()
            } catch {
                await environment.shutdown()
                throw CommandFailure("cannot play on \(route.routeDisplayName): \(error)")
            }
            console.write("Playing \(mediaURL.absoluteString) on \(route.routeDisplayName)")
            let clock = SystemHostClock()
            let end = clock.now() + .seconds(double: seconds)
            while clock.now() < end {
                try? await clock.sleep(for: min(.seconds(1), end - clock.now()))
                console.write("  \(media.playbackControl.playbackState.rawValue) \(MediaRouteCommands.seconds(media.playbackControl.currentPlaybackPosition))")
            }
            if keep && environment.usesDaemon {
                console.write("Left playing on \(route.routeDisplayName); `mediaroutectl stop --to \"\(route.routeDisplayName)\" --bus …` ends it.")
            } else {
                await endRoute(route, environment: environment)
                console.write("Stopped.")
            }
            await environment.shutdown()
        }
    }

    /// Sets or steps a device's volume.
    public struct Volume: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(
            abstract: "Set a device's volume (0-100), or step it with --up/--down.")

        @OptionGroup public var common: CommonOptions
        @Argument(help: "Volume in percent (0-100).") public var level: Int?
        @Option(help: "The device's name.") public var to: String
        @Option(help: "Steps up.") public var up: Int?
        @Option(help: "Steps down.") public var down: Int?
        @Option(help: "The pairing code, if the device asks for one.") public var pin: String?

        public init() {}

        public func validate() throws {
            let given = [level != nil, up != nil, down != nil].filter { $0 }.count
            guard given == 1 else { throw ValidationError("give exactly one of LEVEL, --up, --down") }
            if let level, !(0...100).contains(level) { throw ValidationError("LEVEL must be 0-100") }
        }

        public func run() async throws { try await run(console: StandardConsole()) }

        public func run(console: any Console) async throws {
            let steps = (up ?? 0) - (down ?? 0)
            try await changeVolume(common: common, device: to, pin: pin, console: console) { route in
                if let level { try await route.setVolume(Float(level) / 100) } else { try await route.changeVolume(by: steps) }
            } report: { route, confirmed in
                guard let confirmed else { return "\(route.routeDisplayName): the device did not confirm the volume" }
                return "\(route.routeDisplayName): volume \(percent(confirmed.volume))\(confirmed.muted ? " (muted)" : "")"
            }
        }
    }

    /// Mutes or unmutes a device.
    public struct Mute: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(abstract: "Mute (or with --off, unmute) a device.")

        @OptionGroup public var common: CommonOptions
        @Option(help: "The device's name.") public var to: String
        @Flag(help: "Unmute instead.") public var off = false
        @Option(help: "The pairing code, if the device asks for one.") public var pin: String?

        public init() {}

        public func run() async throws { try await run(console: StandardConsole()) }

        public func run(console: any Console) async throws {
            let mute = !off
            try await changeVolume(common: common, device: to, pin: pin, console: console) { route in
                try await route.setMuted(mute)
            } report: { route, confirmed in
                guard let confirmed else { return "\(route.routeDisplayName): the device did not confirm" }
                return "\(route.routeDisplayName): \(confirmed.muted ? "muted" : "unmuted")"
            }
        }
    }

    /// Stops whatever this system plays on a device and deactivates it.
    public struct Stop: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(
            abstract: "Stop playback on a device and deactivate it.",
            discussion: "Without a daemon, mediaroutectl hosts the routing system itself, so only what this process started can be stopped.")

        @OptionGroup public var common: CommonOptions
        @Option(help: "The device's name.") public var to: String
        @Option(help: "The pairing code, if the device asks for one.") public var pin: String?

        public init() {}

        public func run() async throws { try await run(console: StandardConsole()) }

        public func run(console: any Console) async throws {
            let environment = try await common.environment(console: console)
            let route = try await activate(to, pin: pin, discoverySeconds: 5, environment: environment, console: console)
            await endRoute(route, environment: environment)
            console.write("\(route.routeDisplayName): stopped and deactivated")
            await environment.shutdown()
        }
    }

    /// Shows devices with their state and the active routes.
    public struct Status: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(abstract: "Show devices, their state and active routes.")

        @OptionGroup public var common: CommonOptions
        @Option(help: "How long to discover, in seconds.") public var seconds: Double = 0.5

        public init() {}

        public func run() async throws { try await run(console: StandardConsole()) }

        public func run(console: any Console) async throws {
            let environment = try await common.environment(console: console)
            let entries = await environment.discover(seconds: seconds)
            for entry in entries {
                console.write("\(entry.displayName): \(entry.state.rawValue) via \(entry.protocolDisplayNames.joined(separator: ", "))")
            }
            let routes = environment.controller.routes
            console.write(environment.usesDaemon ? "Connected to mediarouted." : "Routing system in this process.")
            console.write(routes.isEmpty ? "No active routes." : "Active routes: \(routes.map(\.routeDisplayName).joined(separator: ", "))")
            await environment.shutdown()
        }
    }
}

/// Stops the route's session, if any, and deactivates the route.
func endRoute(_ route: SystemRoute, environment: RoutingEnvironment) async {
    if let session = route.currentSession {
        await session.stop()
        route.removeSession(session)
    }
    await environment.controller.deactivate(route)
}

/// Activates `device`, applies a volume or mute change, and reports what the device confirmed.
func changeVolume(
    common: CommonOptions, device: String, pin: String?, console: any Console,
    change: (SystemRoute) async throws -> Void,
    report: (SystemRoute, (volume: Float, muted: Bool)?) -> String
) async throws {
    let environment = try await common.environment(console: console)
    let route = try await activate(device, pin: pin, discoverySeconds: 5, environment: environment, console: console)
    let changes = route.volumeChanges()
    do {
        try await change(route)
    } catch {
        await environment.shutdown()
        throw CommandFailure("\(error)")
    }
    console.write(report(route, await first(of: changes, within: .seconds(2))))
    await environment.shutdown()
}

/// The first element of `stream` within `timeout`, or nil.
func first<Element: Sendable>(of stream: AsyncStream<Element>, within timeout: Duration) async -> Element? {
    await withTaskGroup(of: Element?.self) { group in
        group.addTask {
            for await element in stream { return element }
            return nil
        }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        let result = await group.next() ?? nil
        group.cancelAll()
        return result
    }
}
