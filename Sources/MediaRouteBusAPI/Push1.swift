import RoutingModel
public import DBus

/// `org.mediaroute.Push1` at `/org/mediaroute/push`: the tokens a server needs to start and
/// update Now Playing sessions through the push endpoint, the commands people send to
/// pushed sessions, and their wire form.
public enum Push1 {
    public static let interface = "org.mediaroute.Push1"
    public static let path: DBusObjectPath = "/org/mediaroute/push"

    /// The error for a session id the Now Playing center does not know.
    public static func sessionNotFound(_ id: String) -> DBusError {
        DBusError(name: DaemonNames.errorPrefix + "SessionNotFound", message: "no Now Playing session \(id)")
    }

    /// Every property of the interface.
    public struct Properties: Sendable, Hashable {
        /// `http://HOST:PORT/nowplaying`; nil when the endpoint is off.
        public var endpoint: String?
        /// The push topic of pushed sessions.
        public var topic: String

        public init(endpoint: String?, topic: String) {
            self.endpoint = endpoint
            self.topic = topic
        }

        public static let signatures: [(name: String, signature: String)] = [("Endpoint", "s"), ("Topic", "s")]

        public var values: [String: DBusValue] { ["Endpoint": .string(endpoint ?? ""), "Topic": .string(topic)] }

        public init?(values: [String: DBusValue]) {
            guard let endpoint = values["Endpoint"]?.string, let topic = values["Topic"]?.string else { return nil }
            self.init(endpoint: endpoint.isEmpty ? nil : endpoint, topic: topic)
        }
    }

    /// A call of one of the interface's methods; each replies with a token in hex.
    public enum Call: BusCall, Hashable {
        case getPushToStartToken
        case rotatePushToStartToken
        case getSessionPushToken(session: String)
        case rotateSessionPushToken(session: String)

        public static let methods: [BusMethodDescription] = [
            BusMethodDescription("GetPushToStartToken", outputs: [DBusArgument("token", "s")]),
            BusMethodDescription("RotatePushToStartToken", outputs: [DBusArgument("token", "s")]),
            BusMethodDescription("GetSessionPushToken", inputs: [DBusArgument("session", "s")], outputs: [DBusArgument("token", "s")]),
            BusMethodDescription("RotateSessionPushToken", inputs: [DBusArgument("session", "s")], outputs: [DBusArgument("token", "s")]),
        ]

        public init(member: String, arguments: [DBusValue]) throws(DBusError) {
            switch member {
            case "GetPushToStartToken": _ = try BusArguments(member, arguments, count: 0); self = .getPushToStartToken
            case "RotatePushToStartToken": _ = try BusArguments(member, arguments, count: 0); self = .rotatePushToStartToken
            case "GetSessionPushToken": self = .getSessionPushToken(session: try BusArguments(member, arguments, count: 1).string(0))
            case "RotateSessionPushToken": self = .rotateSessionPushToken(session: try BusArguments(member, arguments, count: 1).string(0))
            default: throw DBusError.unknownMember(member, of: Push1.interface)
            }
        }

        public var member: String {
            switch self {
            case .getPushToStartToken: "GetPushToStartToken"
            case .rotatePushToStartToken: "RotatePushToStartToken"
            case .getSessionPushToken: "GetSessionPushToken"
            case .rotateSessionPushToken: "RotateSessionPushToken"
            }
        }

        public var arguments: [DBusValue] {
            switch self {
            case .getPushToStartToken, .rotatePushToStartToken: []
            case .getSessionPushToken(let id), .rotateSessionPushToken(let id): [.string(id)]
            }
        }
    }

    /// `CommandRequested(s session, s command, a{sv} arguments)`: a person's command for a
    /// pushed session, for the server that pushed it.
    public struct CommandRequested: Sendable, Hashable {
        public static let member = "CommandRequested"
        public static let description = DBusSignalDescription(member, arguments: [
            DBusArgument("session", "s"), DBusArgument("command", "s"), DBusArgument("arguments", "a{sv}"),
        ])

        public var session: String
        public var command: String
        /// The command's number (a seek position, a rate, a volume).
        public var value: Double?
        /// The device the command names, for commands that route.
        public var device: String?

        public init(session: String, command: String, value: Double? = nil, device: String? = nil) {
            self.session = session
            self.command = command
            self.value = value
            self.device = device
        }

        public var arguments: [DBusValue] {
            var entries: [String: DBusValue] = [:]
            if let value { entries["value"] = .double(value) }
            if let device { entries["device"] = .string(device) }
            return [.string(session), .string(command), .properties(entries)]
        }

        /// Nil for a malformed body; unknown argument keys are ignored.
        public init?(body: [DBusValue]) {
            guard body.count == 3, let session = body[0].string, let command = body[1].string, let entries = body[2].dictionary else { return nil }
            self.init(session: session, command: command, value: entries["value"]?.double, device: entries["device"]?.string)
        }
    }
}
