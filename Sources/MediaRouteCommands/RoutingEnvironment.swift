#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
public import BoxConfiguration
public import DBus
public import ExtensionCatalogue
public import Logging
import MediaDevice
public import LANTransport
public import MediaRouteClient
#if SimulatedDevices
public import LoopbackTransport
#endif
public import MediaClock
public import RouteSystem
public import SystemRouting
import UPnPRendererExtension
import RoutingModel

/// A real transport the CLI can open in its own process.
public typealias RealTransport = CatalogueEntry

/// The routing system `mediaroutectl` works with: `mediarouted` over D-Bus, or one
/// hosted in this process with the real transports (and simulated devices when asked).
public struct RoutingEnvironment: Sendable {
    public let controller: SystemRouteController
    #if SimulatedDevices
    /// The simulated devices, when the system runs in this process with --simulate/--scenario.
    public internal(set) var transport: LoopbackTransport?
    #endif
    /// Whether some devices are simulated ones (a development build's --simulate/--scenario).
    public internal(set) var simulatesDevices = false
    /// Whether the commands reach `mediarouted`.
    public var usesDaemon: Bool { daemon != nil }
    /// The client of `mediarouted`, when the commands reach it.
    public let daemon: DaemonRoutingBackend?
    /// The routing system, when it runs in this process.
    public let system: RouteSystem?
    private let close: @Sendable () async -> Void
    /// Where one-line notices go (discovery failures).
    private let notice: @Sendable (String) -> Void

    private init(
        controller: SystemRouteController, daemon: DaemonRoutingBackend?, system: RouteSystem? = nil, close: @escaping @Sendable () async -> Void,
        notice: @escaping @Sendable (String) -> Void
    ) {
        self.controller = controller
        self.daemon = daemon
        self.system = system
        self.close = close
        self.notice = notice
    }

    /// A system in this process with each of `transports` that can open here, configured
    /// by the box's configuration file when there is one; a transport that cannot open is
    /// one `notice` line, never an error. `loadingFirst` loads extensions of
    /// its own before them (the simulated devices, in a development build).
    public static func inProcess(
        transports: Set<RealTransport> = [], lan: LANTransport.Configuration = .init(),
        bluezBus: DBusConnection.Bus = .system, clock: any HostClock = SystemHostClock(),
        configurationPath: String = DaemonConfiguration.defaultPath,
        notice: @escaping @Sendable (String) -> Void = { _ in }, logger: Logger,
        loadingFirst: (RouteSystem) async throws -> Void = { _ in }
    ) async throws -> RoutingEnvironment {
        // The box's own configuration, as the daemon reads it (which transports, Wi-Fi setup SSIDs,
        // preferred protocols, group offsets); a file with a mistake is one notice line and the
        // defaults, as a missing one is silence.
        var configuration = DaemonConfiguration()
        do {
            configuration = try DaemonConfiguration.load(path: configurationPath)
        } catch {
            notice("\(error); using the defaults")
        }
        var routing = RouteSystem.Configuration()
        routing.preferredProtocols = configuration.preferredProtocols
        routing.groupOffsets = configuration.groupOffsetDurations
        let system = RouteSystem(configuration: routing, clock: clock, logger: logger)
        try await loadingFirst(system)
        var catalogue = ExtensionCatalogue(configuration: configuration, lan: lan, bluezBus: bluezBus, clock: clock, logger: logger)
        catalogue.pinIdentities(in: Self.userStateDirectory())
        let loaded = try await catalogue.load(transports, into: system) { entry, reason in notice("\(entry.noticeName): \(reason)") }
        let controller = await SystemRouteController(system: system, applicationIdentifier: "org.mediaroute.ctl")
        return RoutingEnvironment(controller: controller, daemon: nil, system: system, close: {
            await system.shutdown()
            await loaded.close()
        }, notice: notice)
    }

    /// `$XDG_STATE_HOME/mediaroute` (else `~/.local/state/mediaroute`), made when missing:
    /// where the CLI without a daemon keeps what it pins (Cast receivers' certificates).
    static func userStateDirectory() -> String? {
        let environment = ProcessInfo.processInfo.environment
        guard let base = environment["XDG_STATE_HOME"].flatMap({ $0.isEmpty ? nil : $0 }) ?? environment["HOME"].map({ $0 + "/.local/state" }) else { return nil }
        let directory = base + "/mediaroute"
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            return nil
        }
        return directory
    }

    /// `mediarouted` on `bus`.
    /// - Throws: when the bus cannot be reached or no daemon runs there.
    /// - Parameter notice: where the daemon's discovery failures (`Manager1.DiscoveryFailures`) are told.
    public static func daemon(
        on bus: DBusConnection.Bus, notice: @escaping @Sendable (String) -> Void = { _ in }, logger: Logger
    ) async throws -> RoutingEnvironment {
        let connection = try await DBusConnection.connect(to: bus, logger: logger)
        do {
            let backend = try await DaemonRoutingBackend.connect(connection, logger: logger)
            let controller = await SystemRouteController(backend: backend, applicationIdentifier: "org.mediaroute.ctl")
            return RoutingEnvironment(controller: controller, daemon: backend, close: {
                await controller.setPairingAgent(nil)
                await backend.close()
                connection.close()
            }, notice: notice)
        } catch {
            connection.close()
            throw error
        }
    }

    /// Releases what the environment holds (an in-process system is shut down).
    public func shutdown() async {
        await close()
    }

    /// Discovers for `seconds`, reporting progress about every half second; stops
    /// early once `enough` holds for the entries found so far.
    public func discover(
        seconds: Double, progress: @escaping @Sendable (Int) -> Void = { _ in },
        until enough: @escaping @Sendable ([RoutePickerEntry]) -> Bool = { _ in false }
    ) async -> [RoutePickerEntry] {
        let picker = controller.makePicker(prioritizesVideoDevices: true)
        let failures = await reportDiscoveryFailures()
        defer { failures.cancel() }
        let updates = await picker.updates()
        await picker.open()
        let clock = SystemHostClock()
        let deadline = clock.now() + .seconds(double: seconds)
        // Woken by the picker's changes, not by polling: the first list that is enough ends
        // the wait, else the deadline does. Progress is told when the count changes, at most
        // about twice a second.
        let latest = await withTaskGroup(of: [RoutePickerEntry]?.self) { group in
            group.addTask {
                var latest: [RoutePickerEntry] = []
                var lastReport: Duration?
                var reported = -1
                for await entries in updates {
                    latest = entries
                    if enough(entries) { return entries }
                    let now = clock.now()
                    if entries.count != reported, lastReport.map({ now - $0 >= .milliseconds(500) }) ?? true {
                        lastReport = now
                        reported = entries.count
                        progress(entries.count)
                    }
                    if Task.isCancelled { break }
                }
                return Task.isCancelled ? nil : latest
            }
            group.addTask {
                try? await clock.sleep(for: deadline - clock.now())
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        let entries: [RoutePickerEntry]
        if let latest { entries = latest } else { entries = await picker.entries() }
        await picker.close()
        return entries
    }
}

extension RoutingEnvironment {
    /// Writes one notice line per protocol whose discovery fails, with its reason (once, not per retry).
    func reportDiscoveryFailures() async -> Task<Void, Never> {
        let failures = await controller.discoveryFailures()
        let notice = self.notice
        return Task {
            var reported: Set<String> = []
            for await (protocolType, error) in failures {
                guard reported.insert(protocolType.identifier).inserted else { continue }
                notice("\(protocolType.displayName): discovery failed: \(error.message)")
            }
        }
    }
}

/// Answers pairing prompts from a `--pin` option, else by asking at the console.
struct ConsolePairingAgent: PairingAgent {
    let console: any Console
    let pin: String?

    func pairingCode(for request: PairingRequest) async -> String? {
        let hint: String
        switch request.authorizationMethod {
        case .numericCode(let length): hint = "\(length.rawValue) digits"
        case .password: hint = "password"
        case .confirmation(let code): hint = "confirm code \(code) with yes"
        case .none: hint = ""
        }
        console.write("Pairing with \(request.device.displayName): \(request.reason) (\(hint))")
        if let pin {
            console.write("  using the code given with --pin")
            return Self.answer(pin, to: request.authorizationMethod)
        }
        guard let line = console.readLine(prompt: "  code (empty to cancel): "), !line.isEmpty else {
            return nil
        }
        return Self.answer(line, to: request.authorizationMethod)
    }

    /// What a person typed, as the answer to the prompt: a confirmation is confirmed only by
    /// "yes" or "y" (a "no" must not accept a changed certificate), any other code as typed.
    static func answer(_ typed: String, to method: MediaOutputDevice.AuthorizationMethod) -> String? {
        guard case .confirmation = method else { return typed }
        return ["yes", "y"].contains(typed.filter { $0 != " " }.lowercased()) ? "yes" : nil
    }
}
