import DBus
import MediaRouteBusAPI
import Logging
import LoopbackExtension
import LoopbackTransport
import MediaClock
import RouteSystem
import ServiceLifecycle

/// `mediarouted` as a swift-service-lifecycle service: connect, load extensions,
/// publish, own the name; on SIGTERM/SIGINT deactivate routes and release the name.
public struct DaemonService: Service {
    public let bus: DBusConnection.Bus
    public let busName: String
    public let scenario: LoopbackScenario
    public let logger: Logger

    public init(bus: DBusConnection.Bus, busName: String = DaemonNames.busName, scenario: LoopbackScenario, logger: Logger) {
        self.bus = bus
        self.busName = busName
        self.scenario = scenario
        self.logger = logger
    }

    public func run() async throws {
        let connection = try await DBusConnection.connect(to: bus, logger: logger)
        let system = RouteSystem(logger: logger)
        let transport = LoopbackTransport(scenario: scenario, logger: logger)
        let logger = self.logger
        try await system.load { manager in
            LoopbackExtension(transport: transport, routingManager: manager, logger: logger)
        }
        let daemon = RoutingDaemon(system: system, connection: connection, logger: logger)
        try await daemon.start(busName: busName)
        // Ends on SIGTERM/SIGINT (graceful shutdown) or when the bus goes away.
        let disconnected = try await connection.signals(matching: DBusMatchRule(interface: "org.mediaroute.NeverSent"))
        await withGracefulShutdownHandler {
            for await _ in disconnected {}
        } onGracefulShutdown: {
            Task { await daemon.stop(busName: busName); connection.close() }
        }
        if connection.isConnected {
            await daemon.stop(busName: busName)
            connection.close()
        }
        logger.info("mediarouted stopped")
    }
}
