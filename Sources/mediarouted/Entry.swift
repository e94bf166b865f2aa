import ArgumentParser
import DBus
import Logging
import LoopbackTransport
import MediaRouteBusAPI
import MediaRouteDaemon
import ServiceLifecycle

/// `mediarouted`: the routing system as a daemon on D-Bus.
struct Daemon: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mediarouted", abstract: "Host MediaRoute's routing system and publish it on D-Bus.")

    @Option(help: "system, session, or a D-Bus address (unix:path=…).") var bus = "system"
    @Option(help: "The well-known name to own.") var name = DaemonNames.busName
    @Option(help: "A loopback scenario JSON file of simulated devices (default: the built-in TV and speaker).")
    var scenario: String?
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.") var logLevel = "info"

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "mediarouted")
        let target: DBusConnection.Bus = switch bus {
        case "system": .system
        case "session": .session
        default: .address(bus)
        }
        let devices: LoopbackScenario
        do {
            devices = try scenario.map(LoopbackScenario.load(fromFile:)) ?? .standard
        } catch {
            throw ValidationError("\(error)")
        }
        let service = DaemonService(bus: target, busName: name, scenario: devices, logger: logger)
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: service, successTerminationBehavior: .gracefullyShutdownGroup)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        try await group.run()
    }
}

/// Parses and runs by hand (see mediaroutectl's entry point for why).
@main
struct Entry {
    static func main() async {
        do {
            var command = try Daemon.parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            Daemon.exit(withError: error)
        }
    }
}
