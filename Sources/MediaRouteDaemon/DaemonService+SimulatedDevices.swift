#if SimulatedDevices
import AdapterInventory
import BoxConfiguration
import LoopbackExtension
import LoopbackTransport
import RouteSystem

// Development builds only (the `SimulatedDevices` trait): the installed daemon has none of this.
extension DaemonService {
    /// Publishes the scenario's simulated devices, when `--simulate`/`--scenario` asked
    /// for them, and returns what keeps each one reachable only while the adapter it
    /// uses is present and enabled (a device whose adapter goes away is lost, so its
    /// route ends).
    func loadSimulatedDevices(into system: RouteSystem) async throws -> AdapterFollower? {
        guard let scenario else { return nil }
        let logger = self.logger
        let transport = LoopbackTransport(scenario: scenario, logger: logger)
        try await system.load { manager in
            LoopbackExtension(transport: transport, routingManager: manager, logger: logger)
        }
        logger.notice("simulated devices are published (--simulate/--scenario)")
        return { adapters in
            let usable = Set(adapters.filter(\.enabled).map(\.name))
            for spec in scenario.devices {
                guard let adapter = spec.adapter else { continue }
                if usable.contains(adapter) {
                    await transport.addDevice(spec)
                } else {
                    await transport.removeDevice(named: spec.name)
                }
            }
        }
    }
}
#endif
