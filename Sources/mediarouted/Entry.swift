import DBus
import Logging
import LoopbackTransport
import MediaRouteBusAPI
import MediaRouteDaemon
import NowPlayingPush
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
                           [--push-listen HOST:PORT|off] [--mpris on|off] [--mpris-name NAME]

          --bus          the bus to publish on (default: system)
          --name         the well-known name to own (default: \(DaemonNames.busName))
          --scenario     a loopback scenario JSON file of simulated devices (default: a TV and a speaker)
          --log-level    trace, debug, info, notice, warning, error, critical (default: info)
          --push-listen  address of the Now Playing push endpoint (default: 127.0.0.1:7390; port 0 picks one)
          --mpris        publish the primary Now Playing session as an MPRIS player (default: on)
          --mpris-name   its bus name (default: org.mpris.MediaPlayer2.mediaroute)
        """

    /// `HOST:PORT` (`[V6]:PORT` too), or nil for `off`.
    static func pushConfiguration(_ text: String) -> PushEndpoint.Configuration? {
        if text == "off" { return nil }
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else {
            fail("--push-listen takes HOST:PORT or off, not \(text)")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { fail("--push-listen needs a host") }
        return PushEndpoint.Configuration(host: host, port: port)
    }

    static func fail(_ message: String) -> Never {
        var text = "mediarouted: \(message)\n"
        text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
        exit(64)
    }

    static func main() async {
        var options = [
            "--bus": "system", "--name": DaemonNames.busName, "--log-level": "info", "--push-listen": "127.0.0.1:7390",
            "--mpris": "on", "--mpris-name": "org.mpris.MediaPlayer2.mediaroute",
        ]
        var scenarioPath: String?
        var arguments = CommandLine.arguments.dropFirst()
        while let argument = arguments.popFirst() {
            if argument == "--help" || argument == "-h" {
                print(usage)
                return
            }
            guard ["--bus", "--name", "--scenario", "--log-level", "--push-listen", "--mpris", "--mpris-name"].contains(argument) else { fail("unknown option \(argument)\n\(usage)") }
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
        guard options["--mpris"] == "on" || options["--mpris"] == "off" else { fail("--mpris takes on or off") }
        let nowPlaying = DaemonService.NowPlayingOptions(
            mpris: options["--mpris"] == "on", mprisBusName: options["--mpris-name"]!,
            push: pushConfiguration(options["--push-listen"]!))
        let service = DaemonService(bus: bus, busName: options["--name"]!, scenario: scenario, nowPlaying: nowPlaying, logger: logger)
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
