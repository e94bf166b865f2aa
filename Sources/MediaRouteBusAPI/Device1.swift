public import DBus
public import RoutingModel

/// `org.mediaroute.Device1`, one object per device in the picker: its properties,
/// methods and their wire form, used by the daemon to answer and by clients to read.
public enum Device1 {
    public static let interface = DaemonNames.device

    /// One member of a merged device: the device as one protocol reports it.
    public struct Member: Sendable, Hashable {
        public var protocolID: String
        public var protocolName: String
        public var deviceID: String
        /// The member as its protocol describes it (`MemberDetails`); nil from a daemon that
        /// does not say, when the device's merged values stand in.
        public var description: OutputDeviceDescription?
        /// Where this member is in its activation.
        public var state: ActivationState

        public init(
            protocolID: String, protocolName: String, deviceID: String, description: OutputDeviceDescription? = nil,
            state: ActivationState = .idle
        ) {
            self.protocolID = protocolID
            self.protocolName = protocolName
            self.deviceID = deviceID
            self.description = description
            self.state = state
        }
    }

    /// Every property of the interface, typed.
    public struct Properties: Sendable, Hashable {
        public var id: String
        public var name: String
        public var type: OutputDeviceDescription.DeviceType = .unknown
        public var members: [Member] = []
        public var capabilities: OutputDeviceDescription.Capabilities = []
        public var state: ActivationState = .idle
        public var volumeControl: OutputDeviceDescription.VolumeControl = .none
        public var canMute = false
        /// The active route's volume, 0 when the device has no route.
        public var volume: Float = 0
        public var muted = false
        public var unavailableReason: String?
        /// The person's choice of protocol; nil follows the configured order.
        public var preferredProtocol: String?
        /// The person's choice of codecs, most preferred first (settable: `Properties.Set`); empty
        /// follows the configured order (Bluetooth: `[bluetooth] codecs`).
        public var preferredCodecs: [String] = []

        public var isAvailable: Bool { unavailableReason == nil }

        public init(id: String, name: String) {
            self.id = id
            self.name = name
        }

        /// What the daemon publishes for `device`, with its route's volume when it has one.
        public init(device: SystemDevice, volume: (level: Float, muted: Bool)?, preferredProtocol: String?, preferredCodecs: [String] = []) {
            self.init(id: device.id, name: device.displayName)
            self.preferredCodecs = preferredCodecs
            let first = device.members.first?.device
            type = device.deviceType
            members = device.members.map {
                Member(
                    protocolID: $0.protocolType.identifier, protocolName: $0.protocolType.displayName, deviceID: $0.device.id,
                    description: $0.device, state: $0.state)
            }
            capabilities = device.capabilities
            state = device.state
            volumeControl = first?.volumeControl ?? .none
            canMute = first?.canMute ?? false
            self.volume = volume?.level ?? 0
            muted = volume?.muted ?? false
            unavailableReason = device.unavailableReason
            self.preferredProtocol = preferredProtocol
        }

        /// Name and signature of every property, in the order introspection lists them.
        public static let signatures: [(name: String, signature: String)] = [
            ("Id", "s"), ("Name", "s"), ("Type", "s"), ("Protocols", "as"), ("ProtocolNames", "as"), ("Members", "a(sss)"), ("MemberDetails", "a(sssssasssb)"),
            ("Capabilities", "as"), ("State", "s"), ("VolumeControl", "s"), ("CanMute", "b"), ("Volume", "d"), ("Muted", "b"),
            ("Available", "b"), ("UnavailableReason", "s"), ("PreferredProtocol", "s"), ("PreferredCodecs", "as"),
        ]

        /// The `a{sv}` of `GetAll`, `InterfacesAdded` and `PropertiesChanged`.
        public var values: [String: DBusValue] {
            [
                "Id": .string(id),
                "Name": .string(name),
                "Type": .string(type.rawValue),
                "Protocols": .strings(members.map(\.protocolID)),
                "ProtocolNames": .strings(members.map(\.protocolName)),
                "Members": .array(elementSignature: "(sss)", members.map {
                    .structure([.string($0.protocolID), .string($0.protocolName), .string($0.deviceID)])
                }),
                "MemberDetails": .array(elementSignature: "(sssssasssb)", members.compactMap { member in
                    guard let device = member.description else { return nil }
                    return .structure([
                        .string(member.protocolID), .string(member.deviceID), .string(member.state.rawValue), .string(device.displayName),
                        .string(device.deviceType.rawValue), .strings(CapabilityNames.names(of: device.capabilities)),
                        .string(device.volumeControl.rawValue), .string(device.unavailableReason ?? ""), .bool(device.canMute),
                    ])
                }),
                "Capabilities": .strings(CapabilityNames.names(of: capabilities)),
                "State": .string(state.rawValue),
                "VolumeControl": .string(volumeControl.rawValue),
                "CanMute": .bool(canMute),
                "Volume": .double(Double(volume)),
                "Muted": .bool(muted),
                "Available": .bool(isAvailable),
                "UnavailableReason": .string(unavailableReason ?? ""),
                "PreferredProtocol": .string(preferredProtocol ?? ""),
                "PreferredCodecs": .strings(preferredCodecs),
            ]
        }

        /// What `PropertiesChanged` says when the route's volume changes.
        public static func volumeValues(level: Float, muted: Bool) -> [String: DBusValue] {
            ["Volume": .double(Double(level)), "Muted": .bool(muted)]
        }

        /// The properties in `values`; nil without an `Id` and a `Name`.
        public init?(values: [String: DBusValue]) {
            guard let id = values["Id"]?.string, let name = values["Name"]?.string else { return nil }
            self.init(id: id, name: name)
            apply(values)
        }

        /// Applies a `PropertiesChanged` payload: known properties of the right type change,
        /// anything else is left as it was.
        public mutating func apply(_ changed: [String: DBusValue]) {
            for (key, value) in changed {
                switch key {
                case "Id": if let text = value.string { id = text }
                case "Name": if let text = value.string { name = text }
                case "Type": if let text = value.string { type = OutputDeviceDescription.DeviceType(rawValue: text) ?? .unknown }
                case "Members":
                    guard let entries = value.array else { continue }
                    // A member is listed once: a second entry for the same one is dropped, so the
                    // details that follow are each one member's.
                    var seen: Set<[String]> = []
                    members = entries.compactMap { entry in
                        guard case .structure(let fields) = entry.unwrapped, fields.count == 3,
                            let protocolID = fields[0].string, let protocolName = fields[1].string, let deviceID = fields[2].string,
                            seen.insert([protocolID, deviceID]).inserted
                        else { return nil }
                        // What the details said of a member stays until they say otherwise.
                        let known = members.first { $0.protocolID == protocolID && $0.deviceID == deviceID }
                        return Member(
                            protocolID: protocolID, protocolName: protocolName, deviceID: deviceID, description: known?.description,
                            state: known?.state ?? .idle)
                    }
                case "MemberDetails":
                    continue  // after the members themselves, below
                case "Capabilities":
                    if let names = value.array?.compactMap(\.string) { capabilities = CapabilityNames.capabilities(named: names) }
                case "State": if let text = value.string { state = ActivationState(rawValue: text) ?? .idle }
                case "VolumeControl":
                    if let text = value.string { volumeControl = OutputDeviceDescription.VolumeControl(rawValue: text) ?? .none }
                case "CanMute": if let flag = value.bool { canMute = flag }
                case "Volume": if let level = value.double, level.isFinite { volume = Float(min(max(level, 0), 1)) }
                case "Muted": if let flag = value.bool { muted = flag }
                case "Available":
                    guard let flag = value.bool else { continue }
                    if flag { unavailableReason = nil } else if unavailableReason == nil { unavailableReason = "unavailable" }
                case "UnavailableReason":
                    guard let text = value.string else { continue }
                    if !text.isEmpty { unavailableReason = text } else if changed["Available"]?.bool != false { unavailableReason = nil }
                case "PreferredProtocol": if let text = value.string { preferredProtocol = text.isEmpty ? nil : text }
                case "PreferredCodecs": if let names = value.array?.compactMap(\.string) { preferredCodecs = names }
                default: continue
                }
            }
            if let entries = changed["MemberDetails"]?.array {
                for entry in entries {
                    guard case .structure(let fields) = entry.unwrapped, fields.count == 9,
                        let protocolID = fields[0].string, let deviceID = fields[1].string,
                        let index = members.firstIndex(where: { $0.protocolID == protocolID && $0.deviceID == deviceID }),
                        let name = fields[3].string, let names = fields[5].array?.compactMap(\.string),
                        let reason = fields[7].string, let canMute = fields[8].bool
                    else { continue }
                    members[index].state = fields[2].string.flatMap(ActivationState.init(rawValue:)) ?? .idle
                    members[index].description = OutputDeviceDescription(
                        id: deviceID, displayName: name, capabilities: CapabilityNames.capabilities(named: names),
                        deviceType: fields[4].string.flatMap(OutputDeviceDescription.DeviceType.init(rawValue:)) ?? .unknown,
                        volumeControl: fields[6].string.flatMap(OutputDeviceDescription.VolumeControl.init(rawValue:)) ?? .none,
                        canMute: canMute, unavailableReason: reason.isEmpty ? nil : reason)
                }
            }
        }

        /// The device as the routing model knows it; nil when it has no member.
        public var systemDevice: SystemDevice? {
            let members = members.compactMap { member -> SystemDevice.Member? in
                // Each member as its protocol describes it; the merged values only from a daemon
                // that does not say (one type means one thing in-process and over the bus).
                guard let device = member.description ?? OutputDeviceDescription(
                    id: member.deviceID, displayName: name, capabilities: capabilities, deviceType: type,
                    volumeControl: volumeControl, canMute: canMute, unavailableReason: unavailableReason)
                else { return nil }
                return SystemDevice.Member(
                    protocolType: MediaSharingProtocol(member.protocolID, displayName: member.protocolName), device: device,
                    state: member.description == nil ? state : member.state)
            }
            guard !members.isEmpty else { return nil }
            return SystemDevice(id: id, displayName: name, members: members)
        }
    }

    /// A call of one of the interface's methods.
    public enum Call: BusCall, Hashable {
        /// Activates the device, through `protocolID` or the configured order (nil); replies the session's path.
        case activate(protocolID: String?)
        case deactivate
        case setVolume(Float)
        case changeVolume(steps: Int32)
        /// The person's choice of protocol (nil returns to the configured order).
        case setPreferredProtocol(String?)
        case mute(Bool)

        public static let methods: [BusMethodDescription] = [
            BusMethodDescription("Activate", inputs: [DBusArgument("protocol", "s")], outputs: [DBusArgument("session", "o")]),
            BusMethodDescription("Deactivate"),
            BusMethodDescription("SetVolume", inputs: [DBusArgument("volume", "d")]),
            BusMethodDescription("ChangeVolume", inputs: [DBusArgument("steps", "i")]),
            BusMethodDescription("SetPreferredProtocol", inputs: [DBusArgument("protocol", "s")]),
            BusMethodDescription("Mute", inputs: [DBusArgument("muted", "b")]),
        ]

        public init(member: String, arguments: [DBusValue]) throws(DBusError) {
            switch member {
            case "Activate": self = .activate(protocolID: try BusArguments(member, arguments, count: 1).optionalString(0))
            case "Deactivate": _ = try BusArguments(member, arguments, count: 0); self = .deactivate
            case "SetVolume":
                // The routing system clamps to 0...1.
                let level = try BusArguments(member, arguments, count: 1).double(0)
                guard level.isFinite else { throw MediaDeviceError(.invalidArgument, "volume \(level) is not a number").dbusError }
                self = .setVolume(Float(level))
            case "ChangeVolume": self = .changeVolume(steps: try BusArguments(member, arguments, count: 1).int32(0))
            case "SetPreferredProtocol": self = .setPreferredProtocol(try BusArguments(member, arguments, count: 1).optionalString(0))
            case "Mute": self = .mute(try BusArguments(member, arguments, count: 1).bool(0))
            default: throw DBusError.unknownMember(member, of: Device1.interface)
            }
        }

        /// The call carrying an app's playback command, when the command is one of this interface's (volume, mute).
        public init?(_ command: PlaybackCommand) {
            switch command {
            case .setVolume(let level): self = .setVolume(level)
            case .setMuted(let muted): self = .mute(muted)
            default: return nil
            }
        }

        public var member: String {
            switch self {
            case .activate: "Activate"
            case .deactivate: "Deactivate"
            case .setVolume: "SetVolume"
            case .changeVolume: "ChangeVolume"
            case .setPreferredProtocol: "SetPreferredProtocol"
            case .mute: "Mute"
            }
        }

        public var arguments: [DBusValue] {
            switch self {
            case .activate(let protocolID): [.string(protocolID ?? "")]
            case .deactivate: []
            case .setVolume(let level): [.double(Double(level))]
            case .changeVolume(let steps): [.int32(steps)]
            case .setPreferredProtocol(let protocolID): [.string(protocolID ?? "")]
            case .mute(let muted): [.bool(muted)]
            }
        }
    }
}

/// The names of capabilities on the bus.
enum CapabilityNames {
    static let all: [(String, OutputDeviceDescription.Capabilities)] = [
        ("urlPlayback", .urlPlayback), ("realtimeAudioStreaming", .realtimeAudioStreaming), ("realtimeVideoStreaming", .realtimeVideoStreaming),
    ]

    static func names(of capabilities: OutputDeviceDescription.Capabilities) -> [String] {
        all.filter { capabilities.contains($0.1) }.map(\.0)
    }

    /// Unknown names are ignored: a newer daemon may know more.
    static func capabilities(named names: [String]) -> OutputDeviceDescription.Capabilities {
        var capabilities: OutputDeviceDescription.Capabilities = []
        for name in names { if let entry = all.first(where: { $0.0 == name }) { capabilities.insert(entry.1) } }
        return capabilities
    }
}
