public import DBus
public import RoutingModel

/// `org.mediaroute.PairingAgent1`, implemented by apps that answer pairing prompts
/// (as BlueZ calls an `org.bluez.Agent1`): its one method and its wire form.
public enum PairingAgent1 {
    public static let interface = DaemonNames.pairingAgent
    public static let requestMember = "RequestPairingCode"
    /// The error an agent answers with when the person cancelled.
    public static let canceledError = DBusError(name: DaemonNames.errorPrefix + "Canceled", message: "the person cancelled")

    public static let method = BusMethodDescription(
        requestMember,
        inputs: [
            DBusArgument("device", "o"), DBusArgument("name", "s"), DBusArgument("reason", "s"),
            DBusArgument("method", "s"), DBusArgument("length", "u"),
        ],
        outputs: [DBusArgument("code", "s")])

    /// `RequestPairingCode(o device, s name, s reason, s method, u length) → s code`.
    public struct Request: Sendable, Hashable {
        /// The `Device1` object asking.
        public var device: DBusObjectPath
        public var name: String
        public var reason: String
        /// How the device authenticates; `confirmation`'s code is not carried (the person reads it on the device).
        public var method: OutputDeviceDescription.AuthorizationMethod

        public init(device: DBusObjectPath, name: String, reason: String, method: OutputDeviceDescription.AuthorizationMethod) {
            self.device = device
            self.name = name
            self.reason = reason
            self.method = method
        }

        public var arguments: [DBusValue] {
            let (name, length): (String, UInt32) = switch method {
            case .numericCode(let length): ("numeric", UInt32(length.rawValue))
            case .password: ("password", 0)
            case .confirmation: ("confirmation", 0)
            case .none: ("none", 0)
            }
            return [.objectPath(device), .string(self.name), .string(reason), .string(name), .uint32(length)]
        }

        public init(arguments: [DBusValue]) throws(DBusError) {
            let reader = try BusArguments(PairingAgent1.requestMember, arguments, count: 5)
            let method: OutputDeviceDescription.AuthorizationMethod = switch (try reader.string(3), try reader.uint32(4)) {
            case ("numeric", 6): .numericCode(length: .sixCharacter)
            case ("numeric", 4): .numericCode(length: .fourCharacter)
            case ("password", _): .password
            case ("confirmation", _): .confirmation(code: "")
            case ("none", _): .none
            case (let name, let length): throw DBusError.invalidArgs("no pairing method \(name) of length \(length)")
            }
            self.init(device: try reader.objectPath(0), name: try reader.string(1), reason: try reader.string(2), method: method)
        }
    }

    /// The code in an agent's reply; nil for an empty or malformed one.
    public static func code(fromReply reply: [DBusValue]) -> String? {
        guard reply.count == 1, let code = reply[0].string, !code.isEmpty else { return nil }
        return code
    }
}
