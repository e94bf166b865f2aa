import DBus
import MediaRouteBusAPI

/// `/org/mediaroute/group/<n>`: `org.mediaroute.Group1`, one per group route
/// (`Manager1.CreateGroup`): several routes playing one URL on one timeline, kept there by
/// the daemon; its members can leave and join while it plays.
struct GroupObject {
    let daemon: RoutingDaemon
    let number: Int

    var object: DBusObject {
        let daemon = self.daemon
        let number = self.number
        return DBusObject(interfaces: [
            DBusInterface(
                Group1.interface,
                methods: Group1.Call.exportedMethods { call, message in
                    try await daemon.handleGroupCall(call, group: number, sender: message.sender)
                    return []
                },
                properties: Group1.Properties.signatures,
                snapshot: { await daemon.groupProperties(number)?.values ?? [:] }),
        ])
    }
}
