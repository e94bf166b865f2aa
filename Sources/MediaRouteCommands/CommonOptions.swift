public import ArgumentParser
import BoxConfiguration
import LANTransport
import DBus
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
import Logging
#if SimulatedDevices
import LoopbackTransport
#endif

/// Options every command shares.
///
/// Without options a command works with what is really there: `mediarouted` on the
/// system bus when it runs (one notice line says so), else a routing system in this
/// process with every real transport that can open (LAN, BlueZ, Wi-Fi), each one that
/// cannot being one notice line. Simulated devices appear only with `--simulate` or
/// `--scenario`.
public struct CommonOptions: ParsableArguments {
    @Flag(name: .long, help: "Use simulated devices (a loopback TV and speaker) in this process, for demos and tests.")
    public var simulate = false

    @Option(name: .long, help: "A loopback scenario JSON file of simulated devices (implies --simulate).")
    public var scenario: String?

    @Flag(name: .long, help: "Log debug details to standard error.")
    public var verbose = false

    @Option(name: .long, help: "Talk to mediarouted on this bus: system, session, or a D-Bus address. Without it, mediarouted on the system bus is used when it runs there; otherwise the routing system runs in this process.")
    public var bus: String?

    @Flag(name: .customLong("no-daemon"), help: "Run the routing system in this process even when mediarouted runs.")
    public var noDaemon = false

    @Option(name: .long, help: "In this process: only these transports, comma-separated (\(CommonOptions.transportNames); default: every one that can open).")
    public var transports: String?

    @Flag(name: .long, help: "Alias kept for scripts: the LAN is searched by default.")
    public var lan = false

    @Option(name: .customLong("lan-interface"), help: "Search the LAN only on this interface (repeatable).")
    public var lanInterfaces: [String] = []

    @Option(name: .customLong("lan-host"), help: "Also search this renderer's IPv4 address by unicast (repeatable).")
    public var lanHosts: [String] = []

    @Option(
        name: .customLong("bluez-bus"),
        help: ArgumentHelp(
            "Where BlueZ is: system (default) or a D-Bus address (a test rig's bus).",
            visibility: BuildTraits.included.contains("Bluetooth") ? .default : .private))
    public var bluezBus: String?

    #if SimulatedDevices
    /// The scenario used with --simulate when no file is given (a command may choose another built-in one).
    var builtInScenario: LoopbackScenario = .standard
    #endif

    public init() {}

    /// Whether the simulated devices are asked for.
    var simulates: Bool { simulate || scenario != nil }

    /// What an installed build (without the `SimulatedDevices` trait) says to --simulate/--scenario.
    static let noSimulatedDevices =
        "this mediaroutectl has no simulated devices (--simulate, --scenario, demo): they are in development builds only (swift build)"

    /// The transports this build has (a left-out protocol's are not offered).
    static var transportNames: String { RealTransport.allCases.map(\.rawValue).joined(separator: ", ") }

    /// The real transports asked for in this process (nil: every one that opens).
    func requestedTransports() throws -> Set<RealTransport>? {
        guard let transports else {
            // --lan-interface/--lan-host alone keep their old meaning with --simulate: add the LAN.
            if simulates && (lan || !lanInterfaces.isEmpty || !lanHosts.isEmpty) { return [.lan] }
            return simulates ? [] : nil
        }
        var set: Set<RealTransport> = []
        for name in transports.split(separator: ",").map({ $0.filter { $0 != " " }.lowercased() }) where !name.isEmpty {
            guard let transport = RealTransport(rawValue: name) else {
                throw CommandFailure("unknown transport \"\(name)\" (\(Self.transportNames))")
            }
            set.insert(transport)
        }
        return set
    }

    /// The LAN discovery settings.
    var lanConfiguration: LANTransport.Configuration {
        LANTransport.Configuration(
            manualHosts: lanHosts, interfaces: lanInterfaces.isEmpty ? nil : lanInterfaces)
    }

    func environment(console: any Console, allowDaemon: Bool = true) async throws -> RoutingEnvironment {
        var logger = Logger(label: "mediaroutectl")
        logger.logLevel = verbose ? .debug : .critical
        let requested = try requestedTransports()
        if let bus, allowDaemon {
            let target: DBusConnection.Bus = switch bus {
            case "system": .system
            case "session": .session
            default: .address(bus)
            }
            do {
                return try await RoutingEnvironment.daemon(on: target, notice: { console.notice($0) }, logger: logger)
            } catch {
                console.notice("mediarouted is not reachable on the \(bus) bus (\(error)); running in-process instead.")
            }
        } else if allowDaemon && !noDaemon && !simulates && transports == nil {
            // The box's daemon, when it runs, is who holds routes: use it as `catt`/`bluetoothctl` use theirs.
            if let environment = try? await RoutingEnvironment.daemon(on: .system, notice: { console.notice($0) }, logger: logger) {
                console.notice("Using mediarouted on the system bus (--no-daemon runs in this process).")
                return environment
            }
        }
        let bluez: DBusConnection.Bus = switch bluezBus ?? "system" {
        case "system": .system
        case "session": .session
        case let address: .address(address)
        }
        #if SimulatedDevices
        var scenario: LoopbackScenario?
        if simulates {
            do {
                scenario = try self.scenario.map(LoopbackScenario.load(fromFile:)) ?? builtInScenario
            } catch {
                throw CommandFailure("\(error)")
            }
        }
        return try await RoutingEnvironment.inProcess(
            scenario: scenario, transports: requested ?? Set(RealTransport.allCases), lan: lanConfiguration, bluezBus: bluez,
            notice: { console.notice($0) }, logger: logger)
        #else
        if simulates { throw CommandFailure(Self.noSimulatedDevices) }
        return try await RoutingEnvironment.inProcess(
            transports: requested ?? Set(RealTransport.allCases), lan: lanConfiguration, bluezBus: bluez,
            notice: { console.notice($0) }, logger: logger)
        #endif
    }
}
