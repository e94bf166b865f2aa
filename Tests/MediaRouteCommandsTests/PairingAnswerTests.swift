@testable import MediaRouteCommands
import MediaDevice
import RoutingModel
import Testing

/// What a person types at a pairing prompt: a confirmation (a changed Cast certificate, an
/// AirPlay receiver at another host, a Bluetooth numeric comparison) is confirmed only by
/// "yes" — a "no" typed there must not accept the changed device.
@Suite struct PairingAnswerTests {
    @Test func onlyYesConfirmsAndCodesPassAsTyped() {
        let confirm = MediaOutputDevice.AuthorizationMethod.confirmation(code: "0a1b 2c3d")
        for typed in ["yes", "YES", "y", " yes "] { #expect(ConsolePairingAgent.answer(typed, to: confirm) == "yes", "\(typed)") }
        for typed in ["no", "n", "1234", "yess", "0a1b 2c3d"] { #expect(ConsolePairingAgent.answer(typed, to: confirm) == nil, "\(typed)") }
        #expect(ConsolePairingAgent.answer("1234", to: .numericCode(length: .fourCharacter)) == "1234")
        #expect(ConsolePairingAgent.answer("open sesame", to: .password) == "open sesame")
    }
}
