import DBus
import MediaRouteBusAPI
import Testing

@Suite struct Group1Tests {
    @Test func everyCallRoundTripsAndBadArgumentsAreRefused() throws {
        let calls: [Group1.Call] = [
            .play, .pause, .seek(position: 12.5), .addMember("/org/mediaroute/session/a"), .removeMember("/org/mediaroute/session/b"), .end,
        ]
        for call in calls {
            #expect(try Group1.Call(member: call.member, arguments: call.arguments) == call)
            let described = try #require(Group1.Call.methods.first { $0.member == call.member })
            #expect(described.inputs.map(\.signature) == call.arguments.map(\.signature))
        }
        #expect(Set(calls.map(\.member)) == Set(Group1.Call.methods.map(\.member)))
        // A negative or non-finite position, a string for a path, an unknown member: typed refusals.
        for position in [-1.0, .nan, .infinity] {
            #expect(throws: DBusError.self) { try Group1.Call(member: "Seek", arguments: [.double(position)]) }
        }
        #expect(throws: DBusError.self) { try Group1.Call(member: "AddMember", arguments: [.string("/a")]) }
        #expect(throws: DBusError.self) { try Group1.Call(member: "Play", arguments: [.bool(true)]) }
        #expect(throws: DBusError.self) { try Group1.Call(member: "Explode", arguments: []) }
    }

    @Test func propertiesRoundTripAndToleratePartialValues() {
        var properties = Group1.Properties()
        properties.members = ["/org/mediaroute/session/a", "/org/mediaroute/session/b"]
        properties.position = 42.25
        properties.offsets = ["/org/mediaroute/session/a": 0.001, "/org/mediaroute/session/b": -0.0025]
        #expect(Group1.Properties(values: properties.values) == properties)
        #expect(Set(properties.values.keys) == Set(Group1.Properties.signatures.map(\.name)))
        for (name, signature) in Group1.Properties.signatures { #expect(properties.values[name]?.signature == signature) }
        // What is missing or mistyped keeps its default.
        let partial = Group1.Properties(values: ["Position": .string("soon"), "Members": .array(elementSignature: "s", [.string("x")])])
        #expect(partial.position == -1 && partial.members.isEmpty && partial.offsets.isEmpty)
    }
}
