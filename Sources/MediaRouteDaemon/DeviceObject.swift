import DBus
import MediaRouteBusAPI
import MediaDevice
import RoutingModel
import RouteSystem

/// `/org/mediaroute/device/<id>`: `org.mediaroute.Device1`, one per device in the picker.
struct DeviceObject {
    let daemon: RoutingDaemon
    let id: String

    var object: DBusObject {
        let daemon = self.daemon
        let id = self.id
        var device = DBusInterface(
                Device1.interface,
                methods: Device1.Call.exportedMethods { call, _ in
                    switch call {
                    case .activate(let protocolID):
                        return [.objectPath(try await daemon.activate(id, protocolID: protocolID))]
                    case .deactivate:
                        try await daemon.deactivate(id)
                    case .setVolume(let level):
                        try await daemon.withRoute(of: id) { system, session in try await system.setVolume(level, on: session) }
                    case .changeVolume(let steps):
                        try await daemon.withRoute(of: id) { system, session in try await system.changeVolume(by: Int(steps), on: session) }
                    case .setPreferredProtocol(let protocolID):
                        try await daemon.setPreferredProtocol(protocolID, for: id)
                    case .mute(let muted):
                        try await daemon.withRoute(of: id) { system, session in try await system.setMuted(muted, on: session) }
                    }
                    return []
                },
                properties: Device1.Properties.signatures,
                snapshot: { await daemon.deviceProperties(id)?.values ?? [:] })
        // PreferredCodecs is the one settable property: the person's codec order for this device.
        if let index = device.properties.firstIndex(where: { $0.name == "PreferredCodecs" }) {
            device.properties[index].set = { value in
                guard let names = value.array?.compactMap(\.string) else { throw DBusError.invalidArgs("PreferredCodecs is as") }
                try await daemon.setPreferredCodecs(names, for: id)
            }
            device.properties[index].access = .readwrite
        }
        return DBusObject(interfaces: [device])
    }
}
