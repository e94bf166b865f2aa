#if SimulatedDevices
public import DBus
public import LANTransport
public import Logging
import LoopbackExtension
public import LoopbackTransport
public import MediaClock

// Development builds only (the `SimulatedDevices` trait): the installed mediaroutectl has none of this.
extension RoutingEnvironment {
    /// A system in this process: the simulated devices of `scenario` when given, and each
    /// of `transports` that can open here.
    public static func inProcess(
        scenario: LoopbackScenario?, transports: Set<RealTransport> = [], lan: LANTransport.Configuration = .init(),
        bluezBus: DBusConnection.Bus = .system, clock: any HostClock = SystemHostClock(),
        notice: @escaping @Sendable (String) -> Void = { _ in }, logger: Logger
    ) async throws -> RoutingEnvironment {
        guard let scenario else {
            return try await inProcess(transports: transports, lan: lan, bluezBus: bluezBus, clock: clock, notice: notice, logger: logger)
        }
        let transport = LoopbackTransport(scenario: scenario, clock: clock, logger: logger)
        var environment = try await inProcess(
            transports: transports, lan: lan, bluezBus: bluezBus, clock: clock, notice: notice, logger: logger,
            loadingFirst: { system in
                try await system.load { manager in
                    LoopbackExtension(transport: transport, routingManager: manager, clock: clock, logger: logger)
                }
            })
        environment.transport = transport
        environment.simulatesDevices = true
        return environment
    }
}
#endif
