import DBus
import MediaRouteBusAPI
import RouteSystem

/// `/org/mediaroute`: `org.mediaroute.Manager1` (discovery per client, pairing
/// agents) and the ObjectManager of the device and session objects.
struct ManagerObject {
    let daemon: RoutingDaemon

    var object: DBusObject {
        let daemon = self.daemon
        return DBusObject(interfaces: [
            DBusInterface(DaemonNames.manager, methods: [
                DBusMethod("StartDiscovery") { call in
                    await daemon.startDiscovery(for: call.sender)
                    return []
                },
                DBusMethod("StopDiscovery") { call in
                    await daemon.stopDiscovery(for: call.sender)
                    return []
                },
                DBusMethod("RegisterPairingAgent", inputs: [DBusArgument("agent", "o")]) { call in
                    guard let path = call.arguments[0].objectPath else { throw DBusError.invalidArgs("expected an object path") }
                    await daemon.registerAgent(owner: call.sender, path: path)
                    return []
                },
                DBusMethod("UnregisterPairingAgent", inputs: [DBusArgument("agent", "o")]) { call in
                    await daemon.unregisterAgent(owner: call.sender)
                    return []
                },
            ], properties: [
                DBusProperty("Discovering", signature: "b") { .bool(await daemon.system.isDiscovering) },
                DBusProperty("Protocols", signature: "as") {
                    .strings(await daemon.system.loadedProtocols.map(\.identifier))
                },
                DBusProperty("Adapters", signature: "a(ssssbs)") { await RoutingDaemon.adaptersValue(daemon.adapters) },
                DBusProperty("DiscoveryFailures", signature: "a{ss}") { RoutingDaemon.failuresValue(await daemon.discoveryFailures) },
            ]),
        ], isObjectManager: true)
    }
}
