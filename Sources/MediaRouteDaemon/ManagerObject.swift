import DBus
import MediaRouteBusAPI
import MediaDevice
import RouteSystem
import SystemRouting

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
                DBusMethod(
                    "Suggest", inputs: [DBusArgument("application", "s"), DBusArgument("video", "b"), DBusArgument("longForm", "b")],
                    outputs: [DBusArgument("suggestion", "s"), DBusArgument("device", "s"), DBusArgument("name", "s")]
                ) { call in
                    let content = PlaybackContent(isVideo: call.arguments[1].bool ?? false, isLongForm: call.arguments[2].bool ?? false)
                    switch await daemon.suggest(application: call.arguments[0].string ?? "", content: content) {
                    case .local: return [.string("local"), .string(""), .string("")]
                    case .external(let id, let name): return [.string("external"), .string(id), .string(name)]
                    }
                },
                DBusMethod(
                    "RecordRouteChoice",
                    inputs: [DBusArgument("application", "s"), DBusArgument("video", "b"), DBusArgument("longForm", "b"), DBusArgument("device", "s")]
                ) { call in
                    let content = PlaybackContent(isVideo: call.arguments[1].bool ?? false, isLongForm: call.arguments[2].bool ?? false)
                    try await daemon.recordRouteChoice(
                        application: call.arguments[0].string ?? "", content: content, deviceID: call.arguments[3].string ?? "")
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
