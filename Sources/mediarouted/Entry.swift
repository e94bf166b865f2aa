import DBus
import Logging
import LoopbackTransport
import MediaRouteBusAPI
import MediaRouteDaemon
import ServiceLifecycle
#if canImport(Glibc)
import Glibc
#endif

/// `mediarouted`: the routing system as a daemon on D-Bus.
///
/// Options are parsed by hand: the daemon takes four, and leaving
/// swift-argument-parser out keeps its code, and so its resident memory, smaller.
@main
struct Daemon {
    static let usage = """
        USAGE: mediarouted [--bus system|session|ADDRESS] [--name NAME] [--scenario FILE] [--log-level LEVEL]

          --bus        the bus to publish on (default: system)
          --name       the well-known name to own (default: \(DaemonNames.busName))
          --scenario   a loopback scenario JSON file of simulated devices (default: a TV and a speaker)
          --log-level  trace, debug, info, notice, warning, error, critical (default: info)
        """

    static func fail(_ message: String) -> Never {
        var text = "mediarouted: \(message)\n"
        text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
        exit(64)
    }

    static func main() async {
        var options = ["--bus": "system", "--name": DaemonNames.busName, "--log-level": "info"]
        var scenarioPath: String?
        var arguments = CommandLine.arguments.dropFirst()
        while let argument = arguments.popFirst() {
            if argument == "--help" || argument == "-h" {
                print(usage)
                return
            }
            guard ["--bus", "--name", "--scenario", "--log-level"].contains(argument) else { fail("unknown option \(argument)\n\(usage)") }
            guard let value = arguments.popFirst() else { fail("\(argument) needs a value") }
            if argument == "--scenario" { scenarioPath = value } else { options[argument] = value }
        }
        guard let level = Logger.Level(rawValue: options["--log-level"]!) else { fail("unknown log level \(options["--log-level"]!)") }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "mediarouted")
        let bus: DBusConnection.Bus = switch options["--bus"]! {
        case "system": .system
        case "session": .session
        case let address: .address(address)
        }
        let scenario: LoopbackScenario
        do {
            scenario = try scenarioPath.map(LoopbackScenario.load(fromFile:)) ?? .standard
        } catch {
            fail("\(error)")
        }
        let service = DaemonService(bus: bus, busName: options["--name"]!, scenario: scenario, logger: logger)
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: service, successTerminationBehavior: .gracefullyShutdownGroup)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        do {
            try await group.run()
        } catch {
            fail("\(error)")
        }
    }
}
