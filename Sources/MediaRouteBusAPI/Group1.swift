import RoutingModel
public import DBus

/// `org.mediaroute.Group1` at `/org/mediaroute/group/<n>`: the routes of several devices
/// playing one URL on one timeline, coordinated by the daemon (`Manager1.CreateGroup`).
/// Documented in Docs/dbus-api.md.
public enum Group1 {
    public static let interface = "org.mediaroute.Group1"

    public static func path(_ number: Int) -> DBusObjectPath { DaemonNames.root.appending("group").appending(String(number)) }

    /// Every property of the interface, typed.
    public struct Properties: Sendable, Hashable {
        /// The members' sessions, in the order they joined.
        public var members: [DBusObjectPath] = []
        /// Where the group expects its members now, in seconds into the item (−1 before it plays).
        public var position: Double = -1
        /// Each member's position less the group's, in seconds, as the last correction found it
        /// (every 0.5 s while the group plays).
        public var offsets: [DBusObjectPath: Double] = [:]

        public init() {}

        public static let signatures: [(name: String, signature: String)] = [("Members", "ao"), ("Position", "d"), ("Offsets", "a{od}")]

        public var values: [String: DBusValue] {
            [
                "Members": .array(elementSignature: "o", members.map { .objectPath($0) }),
                "Position": .double(position),
                "Offsets": .dictionary(
                    keySignature: "o", valueSignature: "d",
                    offsets.sorted { $0.key < $1.key }.map { DBusDictEntry(.objectPath($0.key), .double($0.value)) }),
            ]
        }

        /// The properties in a `GetAll` reply; what is missing or mistyped keeps its default.
        public init(values: [String: DBusValue]) {
            if case .array(_, let elements)? = values["Members"]?.unwrapped {
                members = elements.compactMap { if case .objectPath(let path) = $0.unwrapped { path } else { nil } }
            }
            if case .double(let value)? = values["Position"]?.unwrapped, value.isFinite { position = value }
            if case .dictionary(_, _, let entries)? = values["Offsets"]?.unwrapped {
                for entry in entries {
                    if case .objectPath(let path) = entry.key.unwrapped, case .double(let offset) = entry.value.unwrapped, offset.isFinite {
                        offsets[path] = offset
                    }
                }
            }
        }
    }

    /// A call of one of the interface's methods.
    public enum Call: BusCall, Hashable {
        /// Plays every member from the group's position (from the start the first time).
        case play
        case pause
        /// Moves every member to `position` seconds into the item.
        case seek(position: Double)
        /// A route that plays the group's URL (started by the caller) joins, moved into place.
        case addMember(DBusObjectPath)
        /// A member leaves; the others play on.
        case removeMember(DBusObjectPath)
        /// Coordination ends; the routes stay as they are.
        case end

        public static let methods: [BusMethodDescription] = [
            BusMethodDescription("Play"),
            BusMethodDescription("Pause"),
            BusMethodDescription("Seek", inputs: [DBusArgument("position", "d")]),
            BusMethodDescription("AddMember", inputs: [DBusArgument("session", "o")]),
            BusMethodDescription("RemoveMember", inputs: [DBusArgument("session", "o")]),
            BusMethodDescription("End"),
        ]

        public init(member: String, arguments: [DBusValue]) throws(DBusError) {
            switch member {
            case "Play": _ = try BusArguments(member, arguments, count: 0); self = .play
            case "Pause": _ = try BusArguments(member, arguments, count: 0); self = .pause
            case "Seek":
                let position = try BusArguments(member, arguments, count: 1).double(0)
                guard position.isFinite, position >= 0 else { throw DBusError.invalidArgs("Seek: the position must be a number of seconds ≥ 0") }
                self = .seek(position: position)
            case "AddMember": self = .addMember(try BusArguments(member, arguments, count: 1).objectPath(0))
            case "RemoveMember": self = .removeMember(try BusArguments(member, arguments, count: 1).objectPath(0))
            case "End": _ = try BusArguments(member, arguments, count: 0); self = .end
            default: throw DBusError.unknownMember(member, of: Group1.interface)
            }
        }

        public var member: String {
            switch self {
            case .play: "Play"
            case .pause: "Pause"
            case .seek: "Seek"
            case .addMember: "AddMember"
            case .removeMember: "RemoveMember"
            case .end: "End"
            }
        }

        public var arguments: [DBusValue] {
            switch self {
            case .play, .pause, .end: []
            case .seek(let position): [.double(position)]
            case .addMember(let path), .removeMember(let path): [.objectPath(path)]
            }
        }
    }
}
