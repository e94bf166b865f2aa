import DBus
import MediaRouteBusAPI

/// `/org/mediaroute`: `org.mediaroute.Manager1` (discovery per client, pairing
/// agents) and the ObjectManager of the device and session objects.
struct ManagerObject {
    let daemon: RoutingDaemon

    var object: DBusObject {
        let daemon = self.daemon
        return DBusObject(interfaces: [
            DBusInterface(
                Manager1.interface,
                methods: Manager1.Call.exportedMethods { call, message in
                    switch call {
                    case .startDiscovery:
                        await daemon.startDiscovery(for: message.sender)
                    case .stopDiscovery:
                        await daemon.stopDiscovery(for: message.sender)
                    case .registerPairingAgent(let path):
                        await daemon.registerAgent(owner: message.sender, path: path)
                    case .unregisterPairingAgent:
                        await daemon.unregisterAgent(owner: message.sender)
                    case .suggest(let application, let content):
                        return Manager1.suggestionReply(await daemon.suggest(application: application, content: content))
                    case .recordRouteChoice(let application, let content, let deviceID):
                        try await daemon.recordRouteChoice(application: application, content: content, deviceID: deviceID)
                    case .acquireGroupAudio(let sessions, let format):
                        return try await daemon.acquireGroupAudio(sessions, format: format, sender: message.sender)
                    case .joinGroupAudio(let session, let member):
                        return try await daemon.joinGroupAudio(session, joining: member)
                    case .createGroup(let sessions):
                        return [.objectPath(try await daemon.createGroup(sessions, owner: message.sender))]
                    case .listTrust:
                        return Manager1.trustReply(await daemon.pinnedIdentities())
                    case .forgetTrust(let name):
                        return [.uint32(UInt32(clamping: try await daemon.forgetIdentity(named: name)))]
                    case .acceptTrust(let name):
                        return [.uint32(UInt32(clamping: try await daemon.acceptIdentity(named: name)))]
                    }
                    return []
                },
                properties: Manager1.Properties.signatures,
                snapshot: { await daemon.managerProperties().values }),
        ], isObjectManager: true)
    }
}
