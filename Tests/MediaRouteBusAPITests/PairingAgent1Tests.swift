import DBus
import RoutingModel
import MediaRouteBusAPI
import Testing

@Suite struct PairingAgent1Tests {
    @Test func everyMethodOfAuthorizationRoundTrips() throws {
        let methods: [OutputDeviceDescription.AuthorizationMethod] = [
            .numericCode(length: .fourCharacter), .numericCode(length: .sixCharacter), .password, .confirmation(code: ""), .none,
        ]
        for method in methods {
            let request = PairingAgent1.Request(device: "/org/mediaroute/device/x", name: "TV", reason: "first use", method: method)
            #expect(request.arguments.map(\.signature) == PairingAgent1.method.inputs.map(\.signature))
            #expect(try PairingAgent1.Request(arguments: request.arguments) == request)
        }
    }

    @Test func anUnknownMethodOrLengthIsRefused() {
        let base: [DBusValue] = [.objectPath("/d"), .string("TV"), .string("r")]
        #expect(throws: DBusError.self) { try PairingAgent1.Request(arguments: base + [.string("numeric"), .uint32(5)]) }
        #expect(throws: DBusError.self) { try PairingAgent1.Request(arguments: base + [.string("retina"), .uint32(0)]) }
        #expect(throws: DBusError.self) { try PairingAgent1.Request(arguments: base + [.string("numeric"), .int32(4)]) }
    }

    @Test func onlyANonEmptyCodeIsAnAnswer() {
        #expect(PairingAgent1.code(fromReply: [.string("1234")]) == "1234")
        #expect(PairingAgent1.code(fromReply: [.string("")]) == nil)
        #expect(PairingAgent1.code(fromReply: [.int32(1234)]) == nil)
    }
}
