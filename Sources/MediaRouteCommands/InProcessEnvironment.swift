import Logging
import LoopbackExtension
import LoopbackTransport
import MediaClock
import RouteSystem
import SystemRouting

/// A routing system hosted in this process, with the loopback extension over
/// the loopback transport: what `mediaroutectl` uses when no daemon runs.
public struct InProcessEnvironment: Sendable {
    public let system: RouteSystem
    public let transport: LoopbackTransport
    public let controller: SystemRouteController

    public static func make(
        scenario: LoopbackScenario, clock: any HostClock = SystemHostClock(), logger: Logger
    ) async throws -> InProcessEnvironment {
        let system = RouteSystem(clock: clock, logger: logger)
        let transport = LoopbackTransport(scenario: scenario, clock: clock, logger: logger)
        try await system.load { manager in
            LoopbackExtension(transport: transport, routingManager: manager, clock: clock, logger: logger)
        }
        let controller = await SystemRouteController(system: system, applicationIdentifier: "org.mediaroute.ctl")
        return InProcessEnvironment(system: system, transport: transport, controller: controller)
    }

    /// Discovers for `seconds`, reporting progress about every half second.
    public func discover(seconds: Double, progress: @Sendable (Int) -> Void = { _ in }) async -> [RoutePickerEntry] {
        let picker = controller.makePicker(prioritizesVideoDevices: true)
        await picker.open()
        let clock = SystemHostClock()
        let deadline = clock.now() + .seconds(double: seconds)
        var ticks = 0
        while clock.now() < deadline {
            let step = min(Duration.milliseconds(500), deadline - clock.now())
            try? await clock.sleep(for: step)
            ticks += 1
            progress(await picker.entries().count)
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
