import RoutingModel
import Testing

@testable import RouteSystem

/// ``ActivationTable``'s moves on values: a report of another session, or from another
/// state, moves nothing.
@Suite struct ActivationTableTests {
    static let key = DeviceKey(protocolID: "org.mediaroute.upnp", deviceID: "uuid:1")
    static func idle() -> Task<Void, Never> { Task { try? await Task.sleep(for: .seconds(3600)) } }

    @Test func oneActivationPerMemberMovingThroughPairingOnlyForItsOwnSession() throws {
        var table = ActivationTable()
        let session = MediaOutputSession(deviceID: "uuid:1")
        let stranger = MediaOutputSession(deviceID: "uuid:1")
        try table.begin(Self.key, session: session, continuation: nil, name: "TV")
        #expect(throws: MediaDeviceError(.activationInProgress, "TV is already being activated")) {
            try table.begin(Self.key, session: stranger, continuation: nil, name: "TV")
        }
        #expect(table.state(of: Self.key) == .activating && table.isActivating(protocolID: "org.mediaroute.upnp"))
        #expect(table.isUnderWay(Self.key, for: session) && !table.isUnderWay(Self.key, for: stranger))

        // Another session's prompt is refused, and what it brought is cancelled.
        let (strayTimeout, strayPrompt) = (Self.idle(), Self.idle())
        let strayAccepted = table.awaitPairing(Self.key, session: stranger, timeout: strayTimeout, prompt: strayPrompt)
        #expect(!strayAccepted)
        #expect(strayTimeout.isCancelled && strayPrompt.isCancelled)
        let answeredEarly = table.pairingAnswered(Self.key, session: session)
        #expect(!answeredEarly, "no code was asked for")

        let firstTimeout = Self.idle()
        table.setTimeout(Self.key, firstTimeout)
        let (timeout, prompt) = (Self.idle(), Self.idle())
        let awaiting = table.awaitPairing(Self.key, session: session, timeout: timeout, prompt: prompt)
        #expect(awaiting)
        #expect(firstTimeout.isCancelled, "the activation's own timeout gives way to the prompt's")
        #expect(table.state(of: Self.key) == .awaitingPairingCode)
        let second = table.awaitPairing(Self.key, session: session, timeout: Self.idle(), prompt: Self.idle())
        #expect(!second, "one prompt at a time")
        let answered = table.pairingAnswered(Self.key, session: session)
        #expect(answered && table.state(of: Self.key) == .activating)

        let finished = table.finish(Self.key)
        #expect(finished?.session == session && timeout.isCancelled && prompt.isCancelled)
        let again = table.finish(Self.key)
        #expect(again == nil && table.state(of: Self.key) == nil && table.states.isEmpty)
        let late = Self.idle()
        table.setTimeout(Self.key, late)
        #expect(late.isCancelled, "a timeout for an activation that ended never fires")
    }
}
