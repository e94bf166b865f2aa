import Foundation
import Testing
import MediaRouteTestSupport
@testable import HAP

/// HAP pairing against the AirPlay 2 test receiver, whose side is PyPI's srptools and Debian's
/// python3-cryptography: transient pairing, PIN pairing right and wrong, pair-verify with the
/// keys kept, a receiver that forgot us; then the encrypted channel carries `GET /info`.
@Suite(.timeLimit(.minutes(1))) struct PairingTests {
    /// Pair-setup over `connection`, answering each step until paired.
    static func pairSetup(_ connection: RTSPTestConnection, _ setup: PairSetup, transient: Bool) throws -> PairSetupResult {
        var setup = setup
        var body = setup.start()
        let headers = ["X-Apple-HKP": transient ? "4" : "3"]
        while true {
            let response = try connection.request("POST", "/pair-setup", headers: headers, body: body)
            switch try setup.receive(response.body) {
            case .send(let next): body = next
            case .paired(let result): return result
            }
        }
    }

    static func pairVerify(_ connection: RTSPTestConnection, _ verify: PairVerify) throws -> [UInt8] {
        var verify = verify
        var body = verify.start()
        while true {
            let response = try connection.request("POST", "/pair-verify", headers: ["X-Apple-HKP": "3"], body: body)
            switch try verify.receive(response.body) {
            case .send(let next): body = next
            case .verified(let secret): return secret
            }
        }
    }

    static func info(_ connection: RTSPTestConnection) throws -> [String: Any] {
        let response = try connection.request("GET", "/info")
        guard response.status == 200 else { throw RTSPTestConnection.Failure(description: "GET /info: \(response.status)") }
        return try PropertyListSerialization.propertyList(from: Data(response.body), format: nil) as? [String: Any] ?? [:]
    }

    @Test func transientPairingKeysAChannelThatCarriesInfo() async throws {
        guard AirPlay2ReceiverPeer.available() else { return }
        let receiver = try AirPlay2ReceiverPeer()
        defer { receiver.stop() }
        let info = try await offPool {
            let connection = try RTSPTestConnection(port: receiver.port)
            let result = try Self.pairSetup(connection, PairSetup(mode: .transient), transient: true)
            #expect(result.sessionKey.count == 64)
            #expect(result.receiver == nil)
            connection.channel = try HAPChannel.control(sharedSecret: result.sessionKey)
            return try Self.info(connection)["name"] as? String
        }
        #expect(info == "Test AirPlay 2")
        #expect(receiver.events.contains { $0["paired"] as? String == "transient" })
        #expect(receiver.events.contains { $0["path"] as? String == "/info" && $0["encrypted"] as? Bool == true })
    }

    @Test func pinPairingKeepsKeysThatPairVerifyUsesOnTheNextConnection() async throws {
        guard AirPlay2ReceiverPeer.available() else { return }
        let receiver = try AirPlay2ReceiverPeer(pin: "4821")
        defer { receiver.stop() }
        let controller = try ControllerIdentity.generate()
        let kept = try await offPool {
            let connection = try RTSPTestConnection(port: receiver.port)
            // Transient pairing is refused by a receiver that wants its PIN.
            var transient = PairSetup(mode: .transient)
            let refusal = try connection.request("POST", "/pair-setup", headers: ["X-Apple-HKP": "4"], body: transient.start())
            var refused: HAPError.Kind?
            do { _ = try transient.receive(refusal.body) } catch let error as HAPError { refused = error.kind }
            #expect(refused == .refused(2))
            return try Self.pairSetup(connection, PairSetup(mode: .pin("4821"), controller: controller), transient: false)
        }
        let identity = try #require(kept.receiver)
        #expect(identity.identifier == receiver.identifier)
        let name = try await offPool {
            let connection = try RTSPTestConnection(port: receiver.port)
            let secret = try Self.pairVerify(connection, PairVerify(controller: controller, receiver: identity))
            connection.channel = try HAPChannel.control(sharedSecret: secret)
            return try Self.info(connection)["name"] as? String
        }
        #expect(name == "Test AirPlay 2")
        #expect(receiver.events.contains { $0["verified"] as? String == controller.identifier })
    }

    @Test func aWrongPINIsRefusedAndNothingIsKept() async throws {
        guard AirPlay2ReceiverPeer.available() else { return }
        let receiver = try AirPlay2ReceiverPeer(pin: "4821")
        defer { receiver.stop() }
        let controller = try ControllerIdentity.generate()
        let failure = try await offPool { () -> HAPError? in
            let connection = try RTSPTestConnection(port: receiver.port)
            do {
                _ = try Self.pairSetup(connection, PairSetup(mode: .pin("1234"), controller: controller), transient: false)
                return nil
            } catch let error as HAPError {
                return error
            }
        }
        #expect(failure?.kind == .refused(2))
        #expect(receiver.events.contains { $0["refused"] as? Int == 4 })
    }

    /// PIN-pairs `controller` with `receiver`, lets `between` act on the receiver and on the identity
    /// kept, then pair-verifies on a new connection: the error, or nil when it verified.
    static func verifyAfterPinPairing(
        _ receiver: AirPlay2ReceiverPeer, _ controller: ControllerIdentity, pin: String,
        between: @escaping @Sendable (ReceiverIdentity) throws -> ReceiverIdentity
    ) async throws -> HAPError? {
        try await offPool { () -> HAPError? in
            let first = try RTSPTestConnection(port: receiver.port)
            let kept = try #require(try Self.pairSetup(first, PairSetup(mode: .pin(pin), controller: controller), transient: false).receiver)
            let identity = try between(kept)
            do {
                _ = try Self.pairVerify(RTSPTestConnection(port: receiver.port), PairVerify(controller: controller, receiver: identity))
                return nil
            } catch let error as HAPError {
                return error
            }
        }
    }

    @Test func aReceiverThatForgotUsRefusesPairVerify() async throws {
        guard AirPlay2ReceiverPeer.available() else { return }
        let receiver = try AirPlay2ReceiverPeer(pin: "0007")
        defer { receiver.stop() }
        let controller = try ControllerIdentity.generate()
        let failure = try await Self.verifyAfterPinPairing(receiver, controller, pin: "0007") { kept in
            _ = try RTSPTestConnection(port: receiver.port).request("POST", "/test/forget")
            return kept
        }
        #expect(failure?.kind == .refused(2))
    }

    @Test func anImpostorWithAnotherKeyFailsPairVerify() async throws {
        guard AirPlay2ReceiverPeer.available() else { return }
        let receiver = try AirPlay2ReceiverPeer(pin: "0007")
        defer { receiver.stop() }
        let controller = try ControllerIdentity.generate()
        // We kept another key for it: what answers is not the receiver we paired with.
        let failure = try await Self.verifyAfterPinPairing(receiver, controller, pin: "0007") { kept in
            ReceiverIdentity(identifier: kept.identifier, publicKey: try HAPCrypto.ed25519KeyPair().publicKey)
        }
        #expect(failure?.kind == .authenticationFailed)
    }
}
