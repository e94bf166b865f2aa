import DBus
import MediaRouteBusAPI
import MediaDevice
import RouteSystem
import RoutingModel

/// A pairing agent in an app, reached over D-Bus (`org.mediaroute.PairingAgent1`),
/// the way BlueZ reaches an `org.bluez.Agent1`.
struct RemotePairingAgent: PairingAgent {
    let connection: DBusConnection
    let owner: String
    let path: DBusObjectPath
    let timeout: Duration
    /// The `Device1` object of the device asking, from the daemon's own device list.
    let devicePath: @Sendable (DeviceKey) async -> DBusObjectPath?

    func pairingCode(for request: PairingRequest) async -> String? {
        let key = DeviceKey(protocolID: request.protocolType.identifier, deviceID: request.device.id)
        guard let device = await devicePath(key) else { return nil }
        let question = PairingAgent1.Request(
            device: device, name: request.device.displayName, reason: request.reason, method: request.authorizationMethod)
        do {
            let reply = try await connection.call(
                destination: owner, path: path, interface: PairingAgent1.interface, member: PairingAgent1.requestMember,
                question.arguments, timeout: timeout)
            return PairingAgent1.code(fromReply: reply)
        } catch {
            // Rejected, cancelled, gone or too slow: all mean no code.
            return nil
        }
    }
}
