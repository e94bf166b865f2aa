public import DBus
public import RoutingModel

/// `org.mediaroute.Manager1` at `/org/mediaroute`: discovery per client, pairing agents,
/// route suggestions, the adapters, and their wire form.
public enum Manager1 {
    public static let interface = DaemonNames.manager

    /// One adapter of the box as `Manager1.Adapters` lists it.
    public struct Adapter: Sendable, Hashable {
        public var name: String
        public var subsystem: String
        public var transport: String
        public var role: String
        public var enabled: Bool
        /// The Wi-Fi scan mode; nil for other adapters.
        public var scanMode: String?

        public init(name: String, subsystem: String, transport: String, role: String, enabled: Bool, scanMode: String?) {
            self.name = name
            self.subsystem = subsystem
            self.transport = transport
            self.role = role
            self.enabled = enabled
            self.scanMode = scanMode
        }
    }

    /// Another MediaRoute box of the household, as `Manager1.Boxes` lists it.
    public struct Box: Sendable, Hashable {
        public var id: String
        public var name: String
        public var host: String
        public var port: UInt16
        /// Its clock less ours (seconds) and the bound of that estimate's error, once the
        /// coordination medium has exchanged clock samples with it (only boxes with the
        /// household's key answer them).
        public var clockOffset: Double?
        public var clockError: Double?

        public init(id: String, name: String, host: String, port: UInt16, clockOffset: Double?, clockError: Double?) {
            self.id = id
            self.name = name
            self.host = host
            self.port = port
            self.clockOffset = clockOffset
            self.clockError = clockError
        }
    }

    /// Every property of the interface, typed.
    public struct Properties: Sendable, Hashable {
        public var discovering = false
        /// The loaded protocols' ids.
        public var protocols: [String] = []
        public var adapters: [Adapter] = []
        /// Why each protocol's discovery failed since discovery last started (protocol id → reason).
        public var discoveryFailures: [String: String] = [:]
        /// The other boxes of the household found over mDNS (`_mediaroute._udp`).
        public var boxes: [Box] = []
        /// The daemon's version (``MediaRouteVersion``).
        public var version: String = MediaRouteVersion.current
        /// The git commit the daemon was built from (`MediaRouteBuild.commit`); empty from an older daemon.
        public var commit: String = ""

        public init() {}

        public static let signatures: [(name: String, signature: String)] = [
            ("Discovering", "b"), ("Protocols", "as"), ("Adapters", "a(ssssbs)"), ("DiscoveryFailures", "a{ss}"), ("Boxes", "a(sssqbdd)"),
            ("Version", "s"), ("Commit", "s"),
        ]

        public var values: [String: DBusValue] {
            ["Discovering": .bool(discovering), "Protocols": .strings(protocols),
             "Adapters": Self.value(of: adapters), "DiscoveryFailures": Self.value(of: discoveryFailures), "Boxes": Self.value(of: boxes),
             "Version": .string(version), "Commit": .string(commit)]
        }

        /// Each box as (id, name, host, port, synced, clock offset s, error bound s); the last
        /// two are 0 until `synced`.
        public static func value(of boxes: [Box]) -> DBusValue {
            .array(elementSignature: "(sssqbdd)", boxes.map { box in
                let synced = box.clockOffset != nil && box.clockError != nil
                return .structure([
                    .string(box.id), .string(box.name), .string(box.host), .uint16(box.port), .bool(synced),
                    .double(synced ? box.clockOffset! : 0), .double(synced ? box.clockError! : 0),
                ])
            })
        }

        public static func value(of adapters: [Adapter]) -> DBusValue {
            .array(elementSignature: "(ssssbs)", adapters.map { adapter in
                .structure([
                    .string(adapter.name), .string(adapter.subsystem), .string(adapter.transport), .string(adapter.role),
                    .bool(adapter.enabled), .string(adapter.scanMode ?? ""),
                ])
            })
        }

        public static func value(of failures: [String: String]) -> DBusValue {
            .dictionary(keySignature: "s", valueSignature: "s",
                        failures.sorted { $0.key < $1.key }.map { DBusDictEntry(.string($0.key), .string($0.value)) })
        }

        public init(values: [String: DBusValue]) {
            self.init()
            apply(values)
        }

        /// Applies a `PropertiesChanged` payload; what is missing or mistyped stays as it was.
        public mutating func apply(_ changed: [String: DBusValue]) {
            if let flag = changed["Discovering"]?.bool { discovering = flag }
            if let text = changed["Version"]?.string { version = text }
            if let text = changed["Commit"]?.string { commit = text }
            if let ids = changed["Protocols"]?.array { protocols = ids.compactMap(\.string) }
            if let entries = changed["Adapters"]?.array {
                adapters = entries.compactMap { entry in
                    guard case .structure(let fields) = entry.unwrapped, fields.count == 6,
                        let name = fields[0].string, let subsystem = fields[1].string, let transport = fields[2].string,
                        let role = fields[3].string, let enabled = fields[4].bool, let scanMode = fields[5].string
                    else { return nil }
                    return Adapter(name: name, subsystem: subsystem, transport: transport, role: role, enabled: enabled,
                                   scanMode: scanMode.isEmpty ? nil : scanMode)
                }
            }
            if let entries = changed["DiscoveryFailures"]?.unwrapped.dictionary {
                discoveryFailures = entries.compactMapValues(\.string)
            }
            if let entries = changed["Boxes"]?.array {
                boxes = entries.compactMap { entry in
                    guard case .structure(let fields) = entry.unwrapped, fields.count == 7,
                        let id = fields[0].string, let name = fields[1].string, let host = fields[2].string,
                        case .uint16(let port) = fields[3].unwrapped, let synced = fields[4].bool,
                        case .double(let offset) = fields[5].unwrapped, case .double(let error) = fields[6].unwrapped
                    else { return nil }
                    let known = synced && offset.isFinite && error.isFinite
                    return Box(id: id, name: name, host: host, port: port, clockOffset: known ? offset : nil, clockError: known ? error : nil)
                }
            }
        }
    }

    /// A call of one of the interface's methods.
    public enum Call: BusCall, Hashable {
        case startDiscovery
        case stopDiscovery
        case registerPairingAgent(DBusObjectPath)
        case unregisterPairingAgent(DBusObjectPath)
        /// Replies with a ``Manager1/suggestionReply(_:)``.
        case suggest(application: String, content: PlaybackContent)
        /// The person's pick for `content` (nil device: played locally).
        case recordRouteChoice(application: String, content: PlaybackContent, deviceID: String?)
        /// One real-time delivery for several routes playing as a group; replies with
        /// ``Manager1/groupAudioReply(descriptor:format:latency:leads:)``.
        case acquireGroupAudio(sessions: [DBusObjectPath], format: SampleBuffer.Format)
        /// A route joins the group another plays in; replies with its lead (`t`, µs).
        case joinGroupAudio(session: DBusObjectPath, member: DBusObjectPath)
        /// The routes of `sessions` (each playing the same URL) become one group the daemon
        /// keeps on one timeline; replies with the group's path (``Group1``).
        case createGroup(sessions: [DBusObjectPath])
        /// What the protocols pinned (Cast certificates, AirPlay hosts and passwords, household
        /// boxes); replies with ``Manager1/trustReply(_:)``.
        case listTrust
        /// Forgets what is pinned for a device (its name or id); replies with how many entries.
        case forgetTrust(name: String)
        /// Pins the identity a device offered in place of its pinned one; replies with how many.
        case acceptTrust(name: String)

        public static let methods: [BusMethodDescription] = [
            BusMethodDescription("StartDiscovery"),
            BusMethodDescription("StopDiscovery"),
            BusMethodDescription("RegisterPairingAgent", inputs: [DBusArgument("agent", "o")]),
            BusMethodDescription("UnregisterPairingAgent", inputs: [DBusArgument("agent", "o")]),
            BusMethodDescription(
                "Suggest", inputs: [DBusArgument("application", "s"), DBusArgument("video", "b"), DBusArgument("longForm", "b")],
                outputs: [DBusArgument("suggestion", "s"), DBusArgument("device", "s"), DBusArgument("name", "s")]),
            BusMethodDescription(
                "RecordRouteChoice",
                inputs: [DBusArgument("application", "s"), DBusArgument("video", "b"), DBusArgument("longForm", "b"), DBusArgument("device", "s")]),
            BusMethodDescription(
                "AcquireGroupAudio",
                inputs: [DBusArgument("sessions", "ao"), DBusArgument("encoding", "s"), DBusArgument("rate", "u"), DBusArgument("channels", "u")],
                outputs: [
                    DBusArgument("fd", "h"), DBusArgument("encoding", "s"), DBusArgument("rate", "u"), DBusArgument("channels", "u"),
                    DBusArgument("latency_us", "t"), DBusArgument("leads_us", "at"),
                ]),
            BusMethodDescription("CreateGroup", inputs: [DBusArgument("sessions", "ao")], outputs: [DBusArgument("group", "o")]),
            BusMethodDescription(
                "JoinGroupAudio", inputs: [DBusArgument("session", "o"), DBusArgument("member", "o")], outputs: [DBusArgument("lead_us", "t")]),
            BusMethodDescription("ListTrust", outputs: [DBusArgument("entries", "a(sssss)")]),
            BusMethodDescription("ForgetTrust", inputs: [DBusArgument("name", "s")], outputs: [DBusArgument("forgotten", "u")]),
            BusMethodDescription("AcceptTrust", inputs: [DBusArgument("name", "s")], outputs: [DBusArgument("accepted", "u")]),
        ]

        public init(member: String, arguments: [DBusValue]) throws(DBusError) {
            switch member {
            case "StartDiscovery": _ = try BusArguments(member, arguments, count: 0); self = .startDiscovery
            case "StopDiscovery": _ = try BusArguments(member, arguments, count: 0); self = .stopDiscovery
            case "RegisterPairingAgent": self = .registerPairingAgent(try BusArguments(member, arguments, count: 1).objectPath(0))
            case "UnregisterPairingAgent": self = .unregisterPairingAgent(try BusArguments(member, arguments, count: 1).objectPath(0))
            case "Suggest":
                let reader = try BusArguments(member, arguments, count: 3)
                self = .suggest(
                    application: try reader.string(0), content: PlaybackContent(isVideo: try reader.bool(1), isLongForm: try reader.bool(2)))
            case "RecordRouteChoice":
                let reader = try BusArguments(member, arguments, count: 4)
                self = .recordRouteChoice(
                    application: try reader.string(0), content: PlaybackContent(isVideo: try reader.bool(1), isLongForm: try reader.bool(2)),
                    deviceID: try reader.optionalString(3))
            case "AcquireGroupAudio":
                let reader = try BusArguments(member, arguments, count: 4)
                self = .acquireGroupAudio(sessions: try Self.sessionPaths(arguments[0], member), format: try reader.pcmFormat(at: 1))
            case "CreateGroup":
                _ = try BusArguments(member, arguments, count: 1)
                self = .createGroup(sessions: try Self.sessionPaths(arguments[0], member))
            case "JoinGroupAudio":
                let reader = try BusArguments(member, arguments, count: 2)
                self = .joinGroupAudio(session: try reader.objectPath(0), member: try reader.objectPath(1))
            case "ListTrust": _ = try BusArguments(member, arguments, count: 0); self = .listTrust
            case "ForgetTrust": self = .forgetTrust(name: try Self.trustName(arguments, member))
            case "AcceptTrust": self = .acceptTrust(name: try Self.trustName(arguments, member))
            default: throw DBusError.unknownMember(member, of: Manager1.interface)
            }
        }

        /// A device's name or id: 1 to 256 bytes.
        private static func trustName(_ arguments: [DBusValue], _ member: String) throws(DBusError) -> String {
            let name = try BusArguments(member, arguments, count: 1).string(0)
            guard !name.isEmpty, name.utf8.count <= 256 else {
                throw MediaDeviceError(.invalidArgument, "name a device (1 to 256 bytes)").dbusError
            }
            return name
        }

        /// A group's sessions: 1 to 32 object paths.
        private static func sessionPaths(_ value: DBusValue, _ member: String) throws(DBusError) -> [DBusObjectPath] {
            guard case .array(elementSignature: "o", let elements) = value.unwrapped, !elements.isEmpty, elements.count <= 32 else {
                throw MediaDeviceError(.invalidArgument, "sessions must be 1 to 32 session paths").dbusError
            }
            var paths: [DBusObjectPath] = []
            for element in elements {
                guard case .objectPath(let path) = element.unwrapped else { throw DBusError.invalidArgs("\(member): sessions must be object paths") }
                paths.append(path)
            }
            return paths
        }

        public var member: String {
            switch self {
            case .startDiscovery: "StartDiscovery"
            case .stopDiscovery: "StopDiscovery"
            case .registerPairingAgent: "RegisterPairingAgent"
            case .unregisterPairingAgent: "UnregisterPairingAgent"
            case .suggest: "Suggest"
            case .recordRouteChoice: "RecordRouteChoice"
            case .acquireGroupAudio: "AcquireGroupAudio"
            case .joinGroupAudio: "JoinGroupAudio"
            case .createGroup: "CreateGroup"
            case .listTrust: "ListTrust"
            case .forgetTrust: "ForgetTrust"
            case .acceptTrust: "AcceptTrust"
            }
        }

        public var arguments: [DBusValue] {
            switch self {
            case .startDiscovery, .stopDiscovery: []
            case .registerPairingAgent(let path), .unregisterPairingAgent(let path): [.objectPath(path)]
            case .suggest(let application, let content): [.string(application), .bool(content.isVideo), .bool(content.isLongForm)]
            case .recordRouteChoice(let application, let content, let deviceID):
                [.string(application), .bool(content.isVideo), .bool(content.isLongForm), .string(deviceID ?? "")]
            case .acquireGroupAudio(let sessions, let format):
                [
                    .array(elementSignature: "o", sessions.map { .objectPath($0) }), .string(format.encoding.pcmName ?? ""),
                    .uint32(UInt32(clamping: format.sampleRate)), .uint32(UInt32(clamping: format.channels)),
                ]
            case .joinGroupAudio(let session, let member): [.objectPath(session), .objectPath(member)]
            case .createGroup(let sessions): [.array(elementSignature: "o", sessions.map { .objectPath($0) })]
            case .listTrust: []
            case .forgetTrust(let name), .acceptTrust(let name): [.string(name)]
            }
        }
    }

    /// `AcquireGroupAudio`'s reply: `AcquireAudio`'s, then each member's lead (how much later
    /// than the slowest it starts, in µs, in the order asked).
    public static func groupAudioReply(descriptor: DBusFileDescriptor, format: SampleBuffer.Format, latency: Duration, leads: [Duration]) -> [DBusValue] {
        Session1.AudioReply.values(descriptor: descriptor, format: format, latency: latency)
            + [.array(elementSignature: "t", leads.map { .uint64(Session1.AudioReply.microseconds($0)) })]
    }

    /// The acquisition and leads in an `AcquireGroupAudio` reply; the descriptor is the caller's.
    public static func groupAudio(from reply: [DBusValue]) throws(DBusError) -> (acquisition: AudioAcquisition, leads: [Duration]) {
        guard reply.count == 6, case .array(elementSignature: "t", let elements) = reply[5].unwrapped else {
            throw DBusError.invalidArgs("AcquireGroupAudio: the reply is not (h, s, u, u, t, at)")
        }
        let acquisition = try Session1.AudioReply.acquisition(from: Array(reply.prefix(5)))
        let leads = elements.map { element -> Duration in
            if case .uint64(let value) = element.unwrapped { return .microseconds(Int64(clamping: value)) }
            return .zero
        }
        return (acquisition, leads)
    }

    /// `ListTrust`'s reply: each entry as (kind, device id, name, pinned, offered or "").
    public static func trustReply(_ entries: [PinnedIdentity]) -> [DBusValue] {
        [.array(elementSignature: "(sssss)", entries.map { entry in
            .structure([.string(entry.kind.rawValue), .string(entry.deviceID), .string(entry.name), .string(entry.pinned), .string(entry.offered ?? "")])
        })]
    }

    /// The entries of a `ListTrust` reply; an entry of an unknown kind or shape is left out.
    public static func pinnedIdentities(fromReply reply: [DBusValue]) throws(DBusError) -> [PinnedIdentity] {
        guard reply.count == 1, case .array(_, let elements) = reply[0].unwrapped else {
            throw DBusError.invalidArgs("ListTrust: the reply is not a(sssss)")
        }
        return elements.compactMap { element in
            guard case .structure(let fields) = element.unwrapped, fields.count == 5, let kind = fields[0].string.flatMap(PinnedIdentity.Kind.init(rawValue:)),
                let id = fields[1].string, let name = fields[2].string, let pinned = fields[3].string, let offered = fields[4].string
            else { return nil }
            return PinnedIdentity(kind: kind, deviceID: id, name: name, pinned: pinned, offered: offered.isEmpty ? nil : offered)
        }
    }

    /// `Suggest`'s reply: `("local", "", "")` or `("external", device id, name)`.
    public static func suggestionReply(_ suggestion: RouteSuggestion) -> [DBusValue] {
        switch suggestion {
        case .local: [.string("local"), .string(""), .string("")]
        case .external(let id, let name): [.string("external"), .string(id), .string(name)]
        }
    }

    /// The suggestion in a `Suggest` reply; anything but a well-formed external one is local.
    public static func suggestion(fromReply reply: [DBusValue]) -> RouteSuggestion {
        guard reply.count == 3, reply[0].string == "external", let id = reply[1].string, let name = reply[2].string, !id.isEmpty else {
            return .local
        }
        return .external(deviceID: id, displayName: name)
    }
}
