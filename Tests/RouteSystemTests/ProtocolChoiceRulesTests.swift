import RoutingModel
import Testing

@testable import RouteSystem

/// The rules of ``ProtocolChoice`` on values: order, candidates, reasons.
@Suite struct ProtocolChoiceRulesTests {
    static let cast = MediaSharingProtocol("org.mediaroute.cast", displayName: "Google Cast")
    static let upnp = MediaSharingProtocol("org.mediaroute.upnp", displayName: "UPnP/DLNA")
    static let raop = MediaSharingProtocol("org.mediaroute.raop", displayName: "AirPlay")

    static func member(
        _ protocolType: MediaSharingProtocol, _ capabilities: OutputDeviceDescription.Capabilities = [.urlPlayback],
        unavailable: String? = nil
    ) -> SystemDevice.Member {
        let device = OutputDeviceDescription(
            id: "tv-\(protocolType.identifier)", displayName: "Den TV", capabilities: capabilities, unavailableReason: unavailable)!
        return SystemDevice.Member(protocolType: protocolType, device: device, state: .idle)
    }

    static let loadOrder = [upnp.identifier: 0, cast.identifier: 1, raop.identifier: 2]

    @Test func thePersonsChoiceThenTheConfiguredOrderThenLoadOrder() {
        let members = [Self.member(Self.upnp), Self.member(Self.cast), Self.member(Self.raop)]
        let byLoad = ProtocolChoice(personsChoice: nil, configured: [], loadOrder: Self.loadOrder)
        #expect(byLoad.ordered(members).map(\.protocolType) == [Self.upnp, Self.cast, Self.raop])
        let configured = ProtocolChoice(personsChoice: nil, configured: ["raop"], loadOrder: Self.loadOrder)
        #expect(configured.ordered(members).map(\.protocolType) == [Self.raop, Self.upnp, Self.cast], "short names count")
        let chosen = ProtocolChoice(personsChoice: Self.cast.identifier, configured: ["raop"], loadOrder: Self.loadOrder)
        #expect(chosen.ordered(members).map(\.protocolType) == [Self.cast, Self.raop, Self.upnp])
    }

    @Test func candidatesAreCapableAndAvailableOrARefusalSayingWhy() throws {
        let choice = ProtocolChoice(personsChoice: nil, configured: [], loadOrder: Self.loadOrder)
        let device = SystemDevice(id: "x", displayName: "Den TV", members: [
            Self.member(Self.upnp), Self.member(Self.raop, [.urlPlayback, .realtimeAudioStreaming], unavailable: "AirPlay 2 only"),
        ])
        #expect(try choice.candidates(of: device, protocolID: nil, features: [.urlPlayback]).map(\.protocolType) == [Self.upnp])
        #expect(throws: MediaDeviceError(.unsupported, "Den TV is unavailable: AirPlay 2 only")) {
            try choice.candidates(of: device, protocolID: nil, features: [.realtimeAudioStreaming])
        }
        #expect(throws: MediaDeviceError(.unsupported, "Den TV has no protocol with the requested features")) {
            try choice.candidates(of: device, protocolID: Self.cast.identifier, features: [])
        }
    }

    @Test func theReasonSaysWhoChoseOrWhatFailedBefore() {
        let member = Self.member(Self.cast)
        #expect(ProtocolChoice(personsChoice: Self.cast.identifier, configured: [], loadOrder: [:]).reason(for: member, after: [])
            == "the protocol chosen for this device")
        #expect(ProtocolChoice(personsChoice: nil, configured: ["upnp"], loadOrder: [:]).reason(for: member, after: []) == "the preferred protocol")
        #expect(ProtocolChoice(personsChoice: nil, configured: [], loadOrder: [:]).reason(for: member, after: [])
            == "the first protocol that can do what is asked")
        #expect(ProtocolChoice(personsChoice: nil, configured: [], loadOrder: [:]).reason(for: member, after: ["UPnP/DLNA failed (refused)"])
            == "falling back: UPnP/DLNA failed (refused)")
        #expect(ProtocolChoice.endsActivation(MediaDeviceError(.authorizationFailed, "wrong code")))
        #expect(!ProtocolChoice.endsActivation(MediaDeviceError(.connectionFailed, "refused")))
    }
}
