import DBus
import MediaRouteBusAPI
import MediaRouteTestSupport
import MediaRouteTesting

/// `mediarouted` on a private bus with the LAN on one lab interface only (no adapters, no push
/// endpoint, no configuration file), and a bus connection once it owns its name.
struct LANDaemon {
    let bus: PrivateBus
    let process: ChildProcess
    let connection: DBusConnection

    init(interface: String) async throws {
        bus = try PrivateBus()
        process = try ChildProcess([
            RunningDaemon.binary, "--bus", bus.address, "--lan", "on", "--lan-interfaces", interface, "--adapters", "off",
            "--push-listen", "off", "--config", "/dev/null", "--log-level", "warning", "--serve-from", "/tmp",
        ])
        connection = try await DBusConnection.connect(to: .address(bus.address))
        let connection = self.connection
        guard await eventually(timeout: .seconds(10), { (try? await connection.nameOwner(of: DaemonNames.busName)) ?? nil != nil }) else {
            stop()
            throw PrivateBusError(message: "mediarouted did not take its name")
        }
    }

    /// Keeps discovery open, as a picker on screen does.
    func startDiscovery() async throws {
        _ = try await connection.call(destination: DaemonNames.busName, path: DaemonNames.root, interface: DaemonNames.manager, member: "StartDiscovery")
    }

    func stop() {
        connection.close()
        process.kill()
        process.wait()
        bus.stop()
    }
}
