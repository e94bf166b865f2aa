import DBus
import MediaRouteBusAPI
import RoutingModel
import Testing

@Suite struct Device1Tests {
    static func speaker() throws -> SystemDevice {
        let upnp = try #require(OutputDeviceDescription(
            id: "uuid:1", displayName: "Kitchen", capabilities: [.urlPlayback], deviceType: .speaker, volumeControl: .absolute, canMute: true))
        let ble = try #require(OutputDeviceDescription(
            id: "AA:BB", displayName: "Kitchen", capabilities: [.urlPlayback], deviceType: .speaker, volumeControl: .absolute, canMute: true))
        return SystemDevice(id: "upnp/uuid:1", displayName: "Kitchen", members: [
            .init(protocolType: MediaSharingProtocol("upnp", displayName: "UPnP"), device: upnp, state: .active),
            .init(protocolType: MediaSharingProtocol("ble", displayName: "Bluetooth LE"), device: ble, state: .active),
        ])
    }

    @Test func propertiesRoundTripThroughTheirWireForm() throws {
        let device = try Self.speaker()
        let properties = Device1.Properties(device: device, volume: (0.25, true), preferredProtocol: "ble")
        let values = properties.values
        #expect(Set(values.keys) == Set(Device1.Properties.signatures.map(\.name)))
        for (name, signature) in Device1.Properties.signatures {
            #expect(values[name]?.signature == signature, "\(name)")
        }
        let decoded = try #require(Device1.Properties(values: values))
        #expect(decoded == properties)
        #expect(decoded.systemDevice == device)
        #expect(values["Protocols"] == .strings(["upnp", "ble"]))
    }

    /// Members that differ (one plays URLs, one takes samples; one is unavailable) reach a
    /// client as they are, not as copies of the merged entry: a member means the same over
    /// the bus as in-process.
    @Test func eachMemberCrossesTheBusAsItsProtocolDescribesIt() throws {
        let cast = try #require(OutputDeviceDescription(
            id: "cast-1", displayName: "Den TV", capabilities: [.urlPlayback], deviceType: .tv, volumeControl: .absolute, canMute: true))
        let raop = try #require(OutputDeviceDescription(
            id: "aa:bb", displayName: "Den TV", capabilities: [.realtimeAudioStreaming], deviceType: .setTopBox, volumeControl: .relative,
            unavailableReason: "AirPlay 2 only"))
        let device = SystemDevice(id: "cast/cast-1", displayName: "Den TV", members: [
            .init(protocolType: MediaSharingProtocol("cast", displayName: "Google Cast"), device: cast, state: .active),
            .init(protocolType: MediaSharingProtocol("raop", displayName: "AirPlay"), device: raop, state: .idle),
        ])
        let values = Device1.Properties(device: device, volume: nil, preferredProtocol: nil).values
        let mirrored = try #require(Device1.Properties(values: values)?.systemDevice)
        #expect(mirrored == device)
        #expect(mirrored.members.map(\.device.capabilities) == [[.urlPlayback], [.realtimeAudioStreaming]])
        #expect(mirrored.members.last?.device.unavailableReason == "AirPlay 2 only" && mirrored.members.map(\.state) == [.active, .idle])
        // A change of the member list alone keeps what the details said of the members that stay.
        var properties = try #require(Device1.Properties(values: values))
        properties.apply(["Members": values["Members"]!])
        #expect(properties.systemDevice == device)
    }

    @Test func aChangePayloadChangesOnlyWhatItCarries() throws {
        var properties = Device1.Properties(device: try Self.speaker(), volume: nil, preferredProtocol: nil)
        properties.apply(Device1.Properties.volumeValues(level: 0.5, muted: true))
        #expect(properties.volume == 0.5 && properties.muted)
        #expect(properties.name == "Kitchen" && properties.members.count == 2)
        // The device falling asleep, as the daemon says it: what changed, members' details included.
        let speaker = try Self.speaker()
        let asleep = SystemDevice(id: speaker.id, displayName: speaker.displayName, members: speaker.members.map { member in
            var device = member.device
            device.unavailableReason = "asleep"
            return SystemDevice.Member(protocolType: member.protocolType, device: device, state: .idle)
        })
        let awake = properties.values
        let sleeping = Device1.Properties(device: asleep, volume: (0.5, true), preferredProtocol: nil).values
        properties.apply(sleeping.filter { awake[$0.key] != $0.value })
        #expect(properties.unavailableReason == "asleep")
        #expect(properties.systemDevice?.isAvailable == false && properties.systemDevice?.unavailableReason == "asleep")
        properties.apply(awake.filter { sleeping[$0.key] != $0.value })
        #expect(properties.isAvailable && properties.systemDevice?.isAvailable == true)
        // Mistyped or unknown values change nothing.
        let before = properties
        properties.apply(["Volume": .string("loud"), "Name": .int32(3), "Colour": .string("red"), "Volume ": .double(.nan)])
        #expect(properties == before)
    }

    /// A member listed twice (from a peer that is not our daemon) is one member, so each
    /// entry of `MemberDetails` describes one member and the properties survive a round trip.
    @Test func aMemberListedTwiceIsOneMember() throws {
        let values = Device1.Properties(device: try Self.speaker(), volume: nil, preferredProtocol: nil).values
        var doubled = values
        let members = try #require(values["Members"]?.array)
        doubled["Members"] = .array(elementSignature: "(sss)", members + [members[0]])
        doubled["MemberDetails"] = .array(elementSignature: "(sssssasssb)", (values["MemberDetails"]?.array ?? []) + [values["MemberDetails"]!.array![0]])
        var properties = try #require(Device1.Properties(values: doubled))
        properties.apply(doubled)
        #expect(properties.members.count == 2)
        #expect(Device1.Properties(values: properties.values) == properties)
    }

    @Test func aDeviceWithoutIdentityOrMembersIsRefused() {
        #expect(Device1.Properties(values: ["Name": .string("x")]) == nil)
        let bare = Device1.Properties(values: ["Id": .string("a"), "Name": .string("x")])
        #expect(bare != nil && bare?.systemDevice == nil)
    }

    @Test func everyCallRoundTrips() throws {
        let calls: [Device1.Call] = [
            .activate(protocolID: nil), .activate(protocolID: "upnp"), .deactivate, .setVolume(0.5), .changeVolume(steps: -2),
            .setPreferredProtocol(nil), .setPreferredProtocol("ble"), .mute(true),
        ]
        for call in calls {
            #expect(try Device1.Call(member: call.member, arguments: call.arguments) == call)
            let described = try #require(Device1.Call.methods.first { $0.member == call.member })
            #expect(described.inputs.map(\.signature) == call.arguments.map(\.signature))
        }
        #expect(Set(calls.map(\.member)) == Set(Device1.Call.methods.map(\.member)))
    }

    @Test func volumeCommandsOfTheAppMapToCalls() {
        #expect(Device1.Call(.setVolume(0.25)) == .setVolume(0.25))
        #expect(Device1.Call(.setMuted(true)) == .mute(true))
        #expect(Device1.Call(.play) == nil)
        // Every command goes to exactly one interface.
        for command: PlaybackCommand in [.play, .pause, .seek(to: 1), .setSpeed(2), .setVolume(0.5), .setMuted(false), .stop] {
            #expect((Device1.Call(command) == nil) != (Session1.Call(command) == nil), "\(command)")
        }
    }

    @Test func mistypedOrMissingArgumentsAreInvalidArgs() {
        for (member, arguments) in [("SetVolume", [DBusValue.string("half")]), ("Activate", []), ("Mute", [.bool(true), .bool(false)]),
                                    ("ChangeVolume", [.double(1)])] {
            #expect(throws: DBusError.self) { try Device1.Call(member: member, arguments: arguments) }
            do { _ = try Device1.Call(member: member, arguments: arguments) } catch { #expect(error.name == DBusError.invalidArgsName) }
        }
        do { _ = try Device1.Call(member: "Explode", arguments: []) } catch { #expect(error.name == DBusError.unknownMethodName) }
        do { _ = try Device1.Call(member: "SetVolume", arguments: [.double(.nan)]) } catch {
            #expect(error.name == "org.mediaroute.Error.InvalidArgument")
        }
        var properties = Device1.Properties(id: "a", name: "b")
        properties.apply(["Volume": .double(1e300)])
        #expect(properties.volume == 1)
    }
}
