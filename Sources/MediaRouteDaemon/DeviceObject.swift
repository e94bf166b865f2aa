import DBus
import MediaRouteBusAPI
import MediaDevice
import RouteSystem

/// `/org/mediaroute/device/<id>`: `org.mediaroute.Device1`, one per device in the picker.
struct DeviceObject {
    let daemon: RoutingDaemon
    let id: String

    static func properties(of device: SystemDevice, volume: (Float, Bool)?, preferredProtocol: String? = nil) -> [String: DBusValue] {
        var capabilities: [String] = []
        if device.capabilities.contains(.urlPlayback) { capabilities.append("urlPlayback") }
        if device.capabilities.contains(.realtimeAudioStreaming) { capabilities.append("realtimeAudioStreaming") }
        if device.capabilities.contains(.realtimeVideoStreaming) { capabilities.append("realtimeVideoStreaming") }
        let first = device.members.first?.device
        return [
            "Id": .string(device.id),
            "Name": .string(device.displayName),
            "Type": .string(device.deviceType.rawValue),
            "Protocols": .strings(device.members.map(\.protocolType.identifier)),
            "ProtocolNames": .strings(device.protocolDisplayNames),
            "Capabilities": .strings(capabilities),
            "State": .string(device.state.rawValue),
            "VolumeControl": .string(first?.volumeControl.rawValue ?? "none"),
            "CanMute": .bool(first?.canMute ?? false),
            "Members": .array(elementSignature: "(sss)", device.members.map {
                .structure([.string($0.protocolType.identifier), .string($0.protocolType.displayName), .string($0.device.id)])
            }),
            "Volume": .double(Double(volume?.0 ?? 0)),
            "Muted": .bool(volume?.1 ?? false),
            "Available": .bool(device.isAvailable),
            "UnavailableReason": .string(device.unavailableReason ?? ""),
            "PreferredProtocol": .string(preferredProtocol ?? ""),
        ]
    }

    var object: DBusObject {
        let daemon = self.daemon
        let id = self.id
        func property(_ name: String, _ signature: String) -> DBusProperty {
            DBusProperty(name, signature: signature) {
                await daemon.deviceProperties(id)?[name] ?? .string("")
            }
        }
        return DBusObject(interfaces: [
            DBusInterface(DaemonNames.device, methods: [
                DBusMethod("Activate", inputs: [DBusArgument("protocol", "s")], outputs: [DBusArgument("session", "o")]) { call in
                    let protocolID = call.arguments[0].string.flatMap { $0.isEmpty ? nil : $0 }
                    return [.objectPath(try await daemon.activate(id, protocolID: protocolID))]
                },
                DBusMethod("Deactivate") { _ in
                    try await daemon.deactivate(id)
                    return []
                },
                DBusMethod("SetVolume", inputs: [DBusArgument("volume", "d")]) { call in
                    try await daemon.withRoute(of: id) { system, session in
                        try await system.setVolume(Float(call.arguments[0].double ?? .nan), on: session)
                    }
                    return []
                },
                DBusMethod("ChangeVolume", inputs: [DBusArgument("steps", "i")]) { call in
                    try await daemon.withRoute(of: id) { system, session in
                        try await system.changeVolume(by: Int(call.arguments[0].integer ?? 0), on: session)
                    }
                    return []
                },
                DBusMethod("SetPreferredProtocol", inputs: [DBusArgument("protocol", "s")]) { call in
                    // The person's choice of protocol for this device ("" returns to the configured order).
                    let protocolID = call.arguments[0].string.flatMap { $0.isEmpty ? nil : $0 }
                    try await daemon.setPreferredProtocol(protocolID, for: id)
                    return []
                },
                DBusMethod("Mute", inputs: [DBusArgument("muted", "b")]) { call in
                    try await daemon.withRoute(of: id) { system, session in
                        try await system.setMuted(call.arguments[0].bool ?? true, on: session)
                    }
                    return []
                },
            ], properties: [
                property("Id", "s"), property("Name", "s"), property("Type", "s"), property("Protocols", "as"),
                property("ProtocolNames", "as"), property("Members", "a(sss)"), property("Capabilities", "as"), property("State", "s"),
                property("VolumeControl", "s"), property("CanMute", "b"), property("Volume", "d"), property("Muted", "b"),
                property("Available", "b"), property("UnavailableReason", "s"), property("PreferredProtocol", "s"),
            ]),
        ])
    }
}
