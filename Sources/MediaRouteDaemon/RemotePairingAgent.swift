import DBus
import MediaRouteBusAPI
import MediaDevice
import RouteSystem

/// A pairing agent in an app, reached over D-Bus (`org.mediaroute.PairingAgent1`),
/// the way BlueZ reaches an `org.bluez.Agent1`.
struct RemotePairingAgent: PairingAgent {
    let connection: DBusConnection
    let owner: String
    let path: DBusObjectPath
    let timeout: Duration

    func pairingCode(for request: PairingRequest) async -> String? {
        let (method, length): (String, UInt32) = switch request.authorizationMethod {
        case .numericCode(let length): ("numeric", UInt32(length.rawValue))
        case .password: ("password", 0)
        case .confirmation: ("confirmation", 0)
        case .none: ("none", 0)
        }
        let devicePath = DaemonNames.devicePath(request.protocolType.identifier + "/" + request.device.id)
        do {
            let reply = try await connection.call(
                destination: owner, path: path, interface: DaemonNames.pairingAgent, member: "RequestPairingCode",
                [.objectPath(devicePath), .string(request.device.displayName), .string(request.reason), .string(method), .uint32(length)],
                timeout: timeout)
            guard let code = reply.first?.string, !code.isEmpty else { return nil }
            return code
        } catch {
            // Rejected, cancelled, gone or too slow: all mean no code.
            return nil
        }
    }
}
