import BoxConfiguration
import BuildStamp
import Coordination
import DBus
import Dispatch
import Logging
import LANTransport
#if SimulatedDevices
import LoopbackTransport
#endif
import MediaRouteBusAPI
import MediaRouteCommands
import MediaRouteDaemon
#if PipeWire
import PipeWireSink
#endif
import RoutingModel
import MediaRouteExecutors
import NowPlayingPush
import ServiceLifecycle
#if canImport(Glibc)
import Glibc
#endif

/// `mediarouted`: the routing system as a daemon on D-Bus, and, run under the
/// name `mediaroutectl` (the link `make install` makes), the command-line tool.
///
/// One file for both because a box counts flash: the two static binaries shared
/// all but a megabyte of their 20 MB each. The daemon never runs the tool's code,
/// so those pages are never read in and its resident memory is unchanged
/// (Docs/benchmarks.md). Its options are parsed by hand, so that the daemon's
/// start-up touches none of swift-argument-parser.
@main
struct Daemon {
    /// The options of the protocols this build carries (``BuildTraits``): a left-out protocol's are absent.
    static var protocolOptions: (synopsis: String, bluez: String, airPlay: String) {
        var synopsis: [String] = []
        var bluez = "", airPlay = ""
        #if Bluetooth
        synopsis.append("[--bluez-bus system|ADDRESS|off]")
        bluez = "\n  --bluez-bus    where BlueZ is, for BLE speakers (default: system with --bus system, else off)"
        #endif
        #if AirPlay
        synopsis.append("[--airplay-latency SECONDS]")
        airPlay = """

              --airplay-latency  how far ahead of playing AirPlay receivers are sent audio, 0.25 to 10
                                 (default 2, as iTunes: less starts sooner, more rides out a worse network)
            """
        #endif
        return (synopsis.joined(separator: " "), bluez, airPlay)
    }

    /// What `--lan` finds in this build.
    static var lanProtocols: String {
        (["UPnP/DLNA"] + (BuildTraits.included.contains("Cast") ? ["Google Cast"] : []) + (BuildTraits.included.contains("AirPlay") ? ["AirPlay"] : []))
            .joined(separator: ", ")
    }

    static let usage = """
        USAGE: mediarouted [--bus system|session|ADDRESS] [--name NAME] [--simulate] [--scenario FILE] [--log-level LEVEL]
                           [--push-listen HOST:PORT|off] [--mpris on|off] [--mpris-name NAME]
                           [--config FILE] [--adapters on|off] [--lan on|off] [--lan-interfaces IF,IF…]
                           [--ignored-report SECONDS] [--household-key FILE] [--box-name NAME]
                           [--state-dir DIR|off] [--serve-from DIR,DIR…] [--check-config] [--version]
                           \(protocolOptions.synopsis)

          --bus          the bus to publish on (default: system)
          --name         the well-known name to own (default: \(DaemonNames.busName))
          --simulate     also publish simulated devices (the loopback TV and speaker), for demos and tests;
                         development builds only: the installed daemon finds only real devices
          --scenario     a loopback scenario JSON file of simulated devices (implies --simulate)
          --log-level    trace, debug, info, notice, warning, error, critical (default: info)
          --push-listen  address of the Now Playing push endpoint (default: 127.0.0.1:7390; port 0 picks one)
          --mpris        publish the primary Now Playing session as an MPRIS player (default: on)
          --mpris-name   its bus name (default: org.mpris.MediaPlayer2.mediaroute)
          --config       the configuration file (default: /etc/mediaroute/mediaroute.conf, if present);
                         its [daemon] keys are these options' defaults
          --adapters     follow network interfaces and Bluetooth controllers through udev (default: on)\(protocolOptions.bluez)
          --lan          find TVs and speakers on the LAN: \(lanProtocols) (default: on with --bus system, else off)
          --lan-interfaces  search only these interfaces (default: the usable LAN and Wi-Fi adapters)
          --ignored-report  how often SSDP/mDNS datagrams that were ignored (malformed, pointing at another
                            host, over the device table) are reported, as one line with counts (default 60)\(protocolOptions.airPlay)
          --household-key  a file of at least 16 bytes shared by the household's boxes: with it (and --lan on)
                           this box is published as _mediaroute._udp, finds the others while discovering, and
                           coordinates only with boxes that hold the same key
          --box-name     this box's name among them (default: the host name)
          --state-dir    where what the daemon learns is kept (route suggestions; default: /var/lib/mediaroute,
                         the unit's StateDirectory, when it is writable; off: memory only)
          --serve-from   the only directories local files named on the bus are served from (default: [http]
                         serve-from, else /media, /mnt, /srv); a file elsewhere, or given as a symbolic link, is refused
          --check-config check the configuration file and the udev rules' MediaRoute properties, then exit
        \(BuildTraits.included.contains("PipeWire") ? pipeWireSessionUsage : "")

        Protocols in this build: \((["UPnP/DLNA"] + BuildTraits.included).joined(separator: ", "))\(BuildTraits.leftOut.isEmpty ? "" : " (left out: \(BuildTraits.leftOut.joined(separator: ", ")))")
        """

    static let pipeWireSessionUsage = """

               mediarouted pipewire-session [--bus system|session|ADDRESS] [--log-level LEVEL]
                         in a user's session: a PipeWire sink node there for each of the daemon's routes that
                         take samples (the user unit mediaroute-pipewire.service runs it with PipeWire)

        """

    /// Log lines to stderr (the journal under systemd) from `level` up; exits on an unknown level.
    static func bootstrapLogging(_ name: String) {
        guard let level = Logger.Level(rawValue: name) else { fail("unknown log level \(name)") }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }

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

    static func fail(_ message: String, status: Int32 = 64) -> Never {
        printError(message)
        exit(status)
    }

    static func printError(_ message: String) {
        var text = "mediarouted: \(message)\n"
        text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
    }

    /// Swift concurrency runs on ``QuietExecutors`` here, not on libdispatch's
    /// pool, whose monitor would wake the idle daemon every second.
    static func main() {
        if CommandLine.arguments.first?.split(separator: "/").last == "mediaroutectl" {
            // The tool keeps Swift's default executors, as in its own executable.
            Task {
                await MediaRouteCtl.runFromCommandLine()
                exit(0)
            }
            dispatchMain()
        }
        #if PipeWire
        if CommandLine.arguments.dropFirst().first == "pipewire-sink" {
            // A route's PipeWire sink node, started by the daemon (PipeWireSinkLauncher).
            switch PipeWireSink.Options.parse(Array(CommandLine.arguments.dropFirst(2))) {
            case .failure(let error): fail(error.description, status: 64)
            case .success(let options):
                // PipeWire's loop runs on this thread; the route's audio is acquired by tasks on Swift's pool.
                exit(PipeWireSink.run(options))
            }
        }
        if CommandLine.arguments.dropFirst().first == "pipewire-video-sink" {
            // A route's PipeWire video sink node, started by the daemon (PipeWireSinkLauncher).
            switch PipeWireVideoSink.Options.parse(Array(CommandLine.arguments.dropFirst(2))) {
            case .failure(let error): fail(error.description, status: 64)
            case .success(let options):
                // PipeWire's loop runs on this thread; the route's video is acquired by tasks on Swift's pool.
                exit(PipeWireVideoSink.run(options))
            }
        }
        if CommandLine.arguments.dropFirst().first == "pipewire-session" {
            // The routes' sink nodes in a user's session PipeWire (mediaroute-pipewire.service).
            // The daemon's executors, for their quiet and because their threads never end: a sink
            // dies with the thread that started it (PR_SET_PDEATHSIG is per thread), and
            // libdispatch ends idle pool threads after a few seconds.
            QuietExecutors.install()
            Task {
                await runPipeWireSession(Array(CommandLine.arguments.dropFirst(2)))
                exit(0)
            }
            QuietExecutors.runMainThread()
        }
        #endif
        QuietExecutors.install()
        Task {
            await run()
            exit(0)
        }
        QuietExecutors.runMainThread()
    }

    #if PipeWire
    /// `mediarouted pipewire-session [--bus system|session|ADDRESS] [--log-level LEVEL]`.
    static func runPipeWireSession(_ arguments: [String]) async {
        var options = ["--bus": "system", "--log-level": "info"]
        var rest = arguments[...]
        while let key = rest.popFirst() {
            guard options[key] != nil, let value = rest.popFirst() else {
                fail("usage: mediarouted pipewire-session [--bus system|session|ADDRESS] [--log-level LEVEL]", status: 64)
            }
            options[key] = value
        }
        bootstrapLogging(options["--log-level"]!)
        let logger = Logger(label: "mediarouted.pipewire-session")
        await runUntilSignalled(PipeWireSessionHelper(bus: options["--bus"]!, logger: logger), logger: logger)
    }
    #endif

    /// Runs `service` until it ends or SIGTERM/SIGINT shut it down gracefully; a failure exits 64.
    static func runUntilSignalled(_ service: some Service, logger: Logger) async {
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

    static func run() async {
        var options = [
            "--bus": "system", "--name": DaemonNames.busName, "--log-level": "info", "--push-listen": "127.0.0.1:7390",
            "--mpris": "on", "--mpris-name": "org.mpris.MediaPlayer2.mediaroute", "--adapters": "on",
        ]
        var given: [String: String] = [:]
        var checkOnly = false
        var arguments = CommandLine.arguments.dropFirst()
        let valued = ["--bus", "--name", "--scenario", "--log-level", "--push-listen", "--mpris", "--mpris-name", "--config", "--adapters", "--lan", "--lan-interfaces", "--ignored-report", "--household-key", "--box-name", "--state-dir", "--serve-from"]
            + (BuildTraits.included.contains("Bluetooth") ? ["--bluez-bus"] : []) + (BuildTraits.included.contains("AirPlay") ? ["--airplay-latency"] : [])
        // A left-out protocol's option gets one clear line, not "unknown option".
        let leftOutOptions = ["--bluez-bus": "Bluetooth", "--airplay-latency": "AirPlay"].filter { !BuildTraits.included.contains($0.value) }
        while let argument = arguments.popFirst() {
            if argument == "--help" || argument == "-h" {
                print(usage)
                return
            }
            if argument == "--version" {
                print("mediarouted \(MediaRouteBuild.description)")
                return
            }
            if argument == "--check-config" {
                checkOnly = true
                continue
            }
            if argument == "--simulate" {
                given["--simulate"] = "on"
                continue
            }
            if let trait = leftOutOptions[argument] { fail("\(argument): this build leaves \(trait) out (built without the \(trait) trait)") }
            guard valued.contains(argument) else { fail("unknown option \(argument)\n\(usage)") }
            guard let value = arguments.popFirst() else { fail("\(argument) needs a value") }
            given[argument] = value
        }
        // The configuration file's [daemon] keys fill in what the command line did not say.
        let configPath = given["--config"] ?? DaemonConfiguration.defaultPath
        let configuration: DaemonConfiguration
        do {
            configuration = try DaemonConfiguration.load(path: configPath, required: given["--config"] != nil)
        } catch {
            fail("\(error)", status: 78)
        }
        if checkOnly {
            for notice in configuration.notices { printError(notice) }
            let problems = UdevRulesChecker.check()
            for problem in problems { printError("\(problem)") }
            print(problems.isEmpty ? "configuration OK (\(configPath), udev rules)" : "\(problems.count) problem(s) in udev rules")
            exit(problems.isEmpty ? 0 : 1)
        }
        for (key, value) in configuration.daemon { options["--" + key] = value }
        for (key, value) in given { options[key] = value }
        let scenarioPath = options["--scenario"]
        bootstrapLogging(options["--log-level"]!)
        let logger = Logger(label: "mediarouted")
        for notice in configuration.notices { logger.notice("\(notice)") }
        let bus: DBusConnection.Bus = switch options["--bus"]! {
        case "system": .system
        case "session": .session
        case let address: .address(address)
        }
        // Simulated devices only when asked for: a box publishes what is really there.
        #if SimulatedDevices
        let scenario: LoopbackScenario?
        do {
            scenario = try scenarioPath.map(LoopbackScenario.load(fromFile:)) ?? (options["--simulate"] == "on" ? .standard : nil)
        } catch {
            fail("\(error)")
        }
        #else
        if scenarioPath != nil || options["--simulate"] == "on" {
            fail("this mediarouted has no simulated devices (--simulate, --scenario): they are in development builds only (swift build)", status: 64)
        }
        #endif
        guard options["--mpris"] == "on" || options["--mpris"] == "off" else { fail("--mpris takes on or off") }
        guard options["--adapters"] == "on" || options["--adapters"] == "off" else { fail("--adapters takes on or off") }
        let nowPlaying = DaemonService.NowPlayingOptions(
            mpris: options["--mpris"] == "on", mprisBusName: options["--mpris-name"]!,
            push: pushConfiguration(options["--push-listen"]!))
        // Reading every udev rules file only produces log lines: not on the way to the bus name.
        Task.detached(priority: .background) {
            for problem in UdevRulesChecker.check() { logger.error("\(problem)") }
        }
        let bluezBus: DBusConnection.Bus? = switch options["--bluez-bus"] ?? (options["--bus"] == "system" ? "system" : "off") {
        case "off": nil
        case "system": .system
        case "session": .session
        case let address: .address(address)
        }
        let lan = options["--lan"] ?? (options["--bus"] == "system" ? "on" : "off")
        guard lan == "on" || lan == "off" else { fail("--lan takes on or off") }
        // SSDP only: the mDNS services are browsed by the extensions that use them (AirPlay's).
        var lanConfiguration = LANTransport.Configuration()
        if let names = options["--lan-interfaces"] {
            lanConfiguration.interfaces = names.split(separator: ",").map(String.init)
        }
        if let text = options["--ignored-report"] {
            guard let seconds = Int(text), seconds > 0 else { fail("--ignored-report takes a number of seconds") }
            lanConfiguration.ignoredReportPeriod = .seconds(seconds)
        }
        let stateDirectory: String? = switch options["--state-dir"] {
        case "off": nil
        case let directory?: directory
        case nil: access("/var/lib/mediaroute", W_OK) == 0 ? "/var/lib/mediaroute" : nil
        }
        var service = DaemonService(
            bus: bus, busName: options["--name"]!, nowPlaying: nowPlaying, configuration: configuration,
            followsAdapters: options["--adapters"] == "on", bluezBus: bluezBus, lan: lan == "on" ? lanConfiguration : nil,
            stateDirectory: stateDirectory, logger: logger)
        if let text = options["--airplay-latency"] {
            guard let seconds = Double(text), seconds >= 0.25, seconds <= 10 else { fail("--airplay-latency takes seconds from 0.25 to 10") }
            service.airPlayLatency = .milliseconds(Int64((seconds * 1000).rounded()))
        }
        if let path = options["--household-key"] {
            do {
                service.householdKey = try HouseholdKey.load(path: path)
            } catch {
                fail("--household-key: \(error)", status: 78)
            }
        }
        if let text = options["--serve-from"] {
            let directories = text.split(separator: ",").map(String.init).filter { !$0.isEmpty }
            guard !directories.isEmpty, directories.allSatisfy({ $0.hasPrefix("/") }) else { fail("--serve-from takes absolute directories separated by commas") }
            service.serveFrom = directories
        }
        if let name = options["--box-name"] {
            guard !name.isEmpty, name.utf8.count <= 63 else { fail("--box-name takes 1 to 63 bytes") }
            service.boxName = name
        }
        #if SimulatedDevices
        service.scenario = scenario
        #endif
        await runUntilSignalled(service, logger: logger)
    }
}
