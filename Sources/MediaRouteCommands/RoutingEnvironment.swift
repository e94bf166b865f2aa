import DBus
import Logging
import LANTransport
import LoopbackExtension
import MediaRouteClient
import LoopbackTransport
import MediaClock
import RouteSystem
import SystemRouting
import UPnPRendererExtension

/// The routing system `mediaroutectl` works with: `mediarouted` over D-Bus, or one
/// hosted in this process with the loopback extension when no daemon runs.
public struct RoutingEnvironment: Sendable {
    public let controller: SystemRouteController
    /// The simulated devices, when the system runs in this process.
    public let transport: LoopbackTransport?
    /// Whether the commands reach `mediarouted`.
    public let usesDaemon: Bool
    private let close: @Sendable () async -> Void

    /// A system in this process over the loopback transport, and UPnP renderers on the LAN when `lan` is given.
    public static func inProcess(
        scenario: LoopbackScenario, lan: LANTransport.Configuration? = nil, clock: any HostClock = SystemHostClock(), logger: Logger
    ) async throws -> RoutingEnvironment {
        let system = RouteSystem(clock: clock, logger: logger)
        let transport = LoopbackTransport(scenario: scenario, clock: clock, logger: logger)
        try await system.load { manager in
            LoopbackExtension(transport: transport, routingManager: manager, clock: clock, logger: logger)
        }
        if let lan {
            let lanTransport = LANTransport(configuration: lan, logger: logger)
            try await system.load { manager in UPnPRendererExtension(transport: lanTransport, routingManager: manager, logger: logger) }
        }
        let controller = await SystemRouteController(system: system, applicationIdentifier: "org.mediaroute.ctl")
        return RoutingEnvironment(controller: controller, transport: transport, usesDaemon: false) { await system.shutdown() }
    }

    /// `mediarouted` on `bus`.
    /// - Throws: when the bus cannot be reached or no daemon runs there.
    public static func daemon(on bus: DBusConnection.Bus, logger: Logger) async throws -> RoutingEnvironment {
        let connection = try await DBusConnection.connect(to: bus, logger: logger)
        do {
            let backend = try await DaemonRoutingBackend.connect(connection, logger: logger)
            let controller = await SystemRouteController(backend: backend, applicationIdentifier: "org.mediaroute.ctl")
            return RoutingEnvironment(controller: controller, transport: nil, usesDaemon: true) {
                await controller.setPairingAgent(nil)
                await backend.close()
                connection.close()
            }
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
        seconds: Double, progress: @Sendable (Int) -> Void = { _ in },
        until enough: @Sendable ([RoutePickerEntry]) -> Bool = { _ in false }
    ) async -> [RoutePickerEntry] {
        let picker = controller.makePicker(prioritizesVideoDevices: true)
        await picker.open()
        let clock = SystemHostClock()
        let deadline = clock.now() + .seconds(double: seconds)
        var lastReport = clock.now()
        while clock.now() < deadline {
            if enough(await picker.entries()) { break }
            try? await clock.sleep(for: min(.milliseconds(20), deadline - clock.now()))
            if clock.now() - lastReport >= .milliseconds(500) {
                lastReport = clock.now()
                progress(await picker.entries().count)
            }
        }
        let entries = await picker.entries()
        await picker.close()
        return entries
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
            return pin
        }
        guard let line = console.readLine(prompt: "  code (empty to cancel): "), !line.isEmpty else {
            return nil
        }
        return line
    }
}
