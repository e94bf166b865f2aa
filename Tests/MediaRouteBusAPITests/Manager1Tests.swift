import DBus
import RoutingModel
import MediaRouteBusAPI
import Testing

@Suite struct Manager1Tests {
    @Test func propertiesRoundTripThroughTheirWireForm() {
        var properties = Manager1.Properties()
        properties.discovering = true
        properties.protocols = ["upnp", "ble"]
        properties.adapters = [
            Manager1.Adapter(name: "hci0", subsystem: "bluetooth", transport: "bluetooth", role: "sender", enabled: true, scanMode: nil),
            Manager1.Adapter(name: "wlan0", subsystem: "net", transport: "wifi", role: "sender", enabled: false, scanMode: "passive"),
        ]
        properties.discoveryFailures = ["ble": "org.bluez is not on the bus"]
        properties.boxes = [
            Manager1.Box(id: "a1b2", name: "Kitchen Box", host: "192.0.2.4", port: 40_000, clockOffset: -0.0225, clockError: 0.0002),
            Manager1.Box(id: "c3d4", name: "Neighbour Box", host: "192.0.2.5", port: 40_001, clockOffset: nil, clockError: nil),
        ]
        properties.version = "9.8.7"
        properties.commit = "1a2b3c4d5e6f-dirty"
        let values = properties.values
        for (name, signature) in Manager1.Properties.signatures { #expect(values[name]?.signature == signature, "\(name)") }
        #expect(Manager1.Properties(values: values) == properties)
        #expect(Manager1.Properties(values: values).version == "9.8.7" && Manager1.Properties().version == MediaRouteVersion.current)
        var changed = properties
        changed.apply(["Discovering": .bool(false)])
        #expect(!changed.discovering && changed.adapters == properties.adapters)
    }

    @Test func everyCallRoundTrips() throws {
        let content = PlaybackContent(isVideo: true, isLongForm: false)
        let calls: [Manager1.Call] = [
            .startDiscovery, .stopDiscovery, .registerPairingAgent("/a"), .unregisterPairingAgent("/a"),
            .suggest(application: "org.app", content: content), .recordRouteChoice(application: "org.app", content: content, deviceID: nil),
            .recordRouteChoice(application: "", content: content, deviceID: "upnp/uuid:1"),
            .acquireGroupAudio(sessions: ["/org/mediaroute/session/a", "/org/mediaroute/session/b"], format: .cdAudio),
            .joinGroupAudio(session: "/org/mediaroute/session/c", member: "/org/mediaroute/session/a"),
            .createGroup(sessions: ["/org/mediaroute/session/a", "/org/mediaroute/session/b"]),
            .listTrust, .forgetTrust(name: "Living Room TV"), .acceptTrust(name: "cast:abc"),
        ]
        for call in calls {
            #expect(try Manager1.Call(member: call.member, arguments: call.arguments) == call)
            let described = try #require(Manager1.Call.methods.first { $0.member == call.member })
            #expect(described.inputs.map(\.signature) == call.arguments.map(\.signature))
        }
        #expect(throws: DBusError.self) { try Manager1.Call(member: "RegisterPairingAgent", arguments: [.string("/a")]) }
        #expect(Set(calls.map(\.member)) == Set(Manager1.Call.methods.map(\.member)))
        // A group of no routes, and a format that is not PCM, are typed refusals.
        #expect(throws: DBusError.self) {
            try Manager1.Call(member: "AcquireGroupAudio", arguments: [.array(elementSignature: "o", []), .string("s16le"), .uint32(44_100), .uint32(2)])
        }
        #expect(throws: DBusError.self) {
            try Manager1.Call(member: "AcquireGroupAudio", arguments: [.array(elementSignature: "o", [.objectPath("/a")]), .string("mp3"), .uint32(44_100), .uint32(2)])
        }
    }

    @Test func aTrustListRoundTripsAndANameMustBeGiven() throws {
        let entries = [
            PinnedIdentity(kind: .castCertificate, deviceID: "cast:abc", name: "Den TV", pinned: "0a1b 2c3d 4e5f 6a7b", offered: "ffff 0000 1111 2222"),
            PinnedIdentity(kind: .householdBox, deviceID: "box-1", name: "Kitchen box", pinned: "10.0.0.9:5353"),
        ]
        #expect(try Manager1.pinnedIdentities(fromReply: Manager1.trustReply(entries)) == entries)
        let unknown: DBusValue = .array(elementSignature: "(sssss)", [.structure([.string("telepathy"), .string("x"), .string("x"), .string("x"), .string("")])])
        #expect(try Manager1.pinnedIdentities(fromReply: [unknown]).isEmpty, "an unknown kind is left out")
        #expect(throws: DBusError.self) { try Manager1.pinnedIdentities(fromReply: [.string("no")]) }
        #expect(throws: DBusError.self) { try Manager1.Call(member: "ForgetTrust", arguments: [.string("")]) }
        #expect(throws: DBusError.self) { try Manager1.Call(member: "AcceptTrust", arguments: [.string(String(repeating: "x", count: 257))]) }
    }

    @Test func aGroupAudioReplyRoundTrips() throws {
        let reply: [DBusValue] = [
            .string("s16le"), .uint32(44_100), .uint32(2), .uint64(2_073_000), .array(elementSignature: "t", [.uint64(150_000), .uint64(0)]),
        ]
        // Without the descriptor the reply is refused, typed.
        #expect(throws: DBusError.self) { try Manager1.groupAudio(from: reply) }
    }

    @Test func suggestionsRoundTrip() {
        for suggestion in [RouteSuggestion.local, .external(deviceID: "upnp/uuid:1", displayName: "TV")] {
            #expect(Manager1.suggestion(fromReply: Manager1.suggestionReply(suggestion)) == suggestion)
        }
        #expect(Manager1.suggestion(fromReply: [.string("external"), .string(""), .string("TV")]) == .local)
        #expect(Manager1.suggestion(fromReply: []) == .local)
    }
}

@Suite struct Push1Tests {
    @Test func callsPropertiesAndTheCommandSignalRoundTrip() throws {
        for call in [Push1.Call.getPushToStartToken, .rotatePushToStartToken, .getSessionPushToken(session: "s1"), .rotateSessionPushToken(session: "")] {
            #expect(try Push1.Call(member: call.member, arguments: call.arguments) == call)
        }
        #expect(throws: DBusError.self) { try Push1.Call(member: "GetSessionPushToken", arguments: []) }
        for properties in [Push1.Properties(endpoint: "http://10.0.0.1:8080/nowplaying", topic: "box"), Push1.Properties(endpoint: nil, topic: "box")] {
            #expect(Push1.Properties(values: properties.values) == properties)
        }
        for signal in [Push1.CommandRequested(session: "s", command: "seek", value: 12), Push1.CommandRequested(session: "s", command: "route", device: "tv")] {
            #expect(signal.arguments.map(\.signature) == Push1.CommandRequested.description.arguments.map(\.signature))
            #expect(Push1.CommandRequested(body: signal.arguments) == signal)
        }
        #expect(Push1.CommandRequested(body: [.string("s")]) == nil)
    }
}
