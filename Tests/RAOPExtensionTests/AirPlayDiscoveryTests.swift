import BoxConfiguration
import MediaDevice
import MediaRouteTestSupport
import RAOPExtension
import RouteSystem
import RoutingModel
import Synchronization
import Testing
import Transport

/// A transport whose single discovery the test feeds by hand.
private final class FedTransport: Transport {
    let name = "fed"
    let continuation = Mutex<DiscoveryEvents.Continuation?>(nil)

    func discover() -> DiscoveryEvents {
        DiscoveryEvents { continuation in self.continuation.withLock { $0 = continuation } }
    }

    func connect(to endpoint: Endpoint) async throws(TransportError) -> any Connection {
        throw TransportError(.unavailable, "no connections")
    }

    func send(_ event: DiscoveryEvent) { _ = continuation.withLock { $0?.yield(event) } }
}

private func raop(_ instance: String, txt: [String: String] = ["cn": "0,1", "et": "0,1", "md": "0,1,2"]) -> Endpoint {
    Endpoint(id: "\(instance)._raop._tcp.local", transport: "lan", address: .ip(host: "10.0.0.7", port: 5000, interface: nil), name: instance,
             attributes: txt, services: ["_raop._tcp"])
}

private func airPlay(_ instance: String, deviceID: String, model: String = "AppleTV3,2", txt: [String: String] = [:]) -> Endpoint {
    Endpoint(id: "\(instance)._airplay._tcp.local", transport: "lan", address: .ip(host: "10.0.0.7", port: 7000, interface: nil), name: instance,
             attributes: ["deviceid": deviceID, "model": model].merging(txt) { $1 }, services: ["_airplay._tcp"])
}

@Suite(.timeLimit(.minutes(1))) struct AirPlayDiscoveryTests {
    fileprivate func rig() async throws -> (FedTransport, RouteSystem) {
        let transport = FedTransport()
        let system = RouteSystem()
        try await system.load { manager in RAOPExtension(transport: transport, routingManager: manager) }
        await system.beginDiscovery(client: "test")
        #expect(await eventually { transport.continuation.withLock { $0 != nil } })
        return (transport, system)
    }

    @Test func theRAOPAndAirPlayServicesOfOneReceiverAreOneDevice() async throws {
        let (transport, system) = try await rig()
        transport.send(.appeared(airPlay("Living Room", deviceID: "AA:BB:CC:DD:EE:FF")))
        #expect(await eventually { await system.devicesList.count == 1 })
        let alone = try #require(await system.devicesList.first)
        #expect(alone.displayName == "Living Room")
        #expect(alone.members.first?.device.unavailableReason?.contains("no AirPlay 2 pairing") == true, "an AirPlay record without features bit 48 cannot be played to")

        transport.send(.appeared(raop("AABBCCDDEEFF@Living Room")))
        #expect(await eventually { await system.devicesList.first?.members.first?.device.isAvailable == true })
        let merged = await system.devicesList
        #expect(merged.count == 1, "\(merged.map(\.displayName))")
        let key = try #require(merged.first?.members.first?.key)
        let device = try #require(await system.reportedDevice(for: key))
        #expect(device.id == "aa:bb:cc:dd:ee:ff")
        #expect(device.deviceType == .setTopBox, "the model comes from the AirPlay record")
        #expect(device.requiredNetworkEndpoints.map(\.id) == ["AABBCCDDEEFF@Living Room._raop._tcp.local", "Living Room._airplay._tcp.local"])
        #expect(device.identifiers.contains(.mac("aa:bb:cc:dd:ee:ff")))

        // The AirPlay 2 record going leaves the RAOP speaker; the RAOP one going too, nothing.
        transport.send(.lost(endpointID: "Living Room._airplay._tcp.local"))
        #expect(await eventually {
            guard let key = await system.devicesList.first?.members.first?.key else { return false }
            return await system.reportedDevice(for: key)?.requiredNetworkEndpoints.count == 1
        })
        transport.send(.lost(endpointID: "AABBCCDDEEFF@Living Room._raop._tcp.local"))
        #expect(await eventually { await system.devicesList.isEmpty })
        await system.shutdown()
    }

    @Test func receiversWithoutALACOrOnlyEncryptedAreListedWithTheReason() async throws {
        let (transport, system) = try await rig()
        transport.send(.appeared(raop("112233445566@No ALAC", txt: ["cn": "0", "et": "0"])))
        transport.send(.appeared(raop("223344556677@Encrypted", txt: ["cn": "1", "et": "1,3"])))
        transport.send(.appeared(raop("334455667788@Open", txt: ["cn": "1", "et": "0", "pw": "true"])))
        #expect(await eventually { await system.devicesList.count == 3 })
        let reasons = Dictionary(uniqueKeysWithValues: await system.devicesList.map { ($0.displayName, $0.members.first?.device.unavailableReason) })
        #expect(reasons["No ALAC"]??.contains("ALAC") == true)
        #expect(reasons["Encrypted"]??.contains("encrypted") == true)
        #expect(reasons["Open"] == .some(nil), "a password is asked for when activating, not a reason to be unavailable")
        await system.shutdown()
    }

    /// `features` decides: an AirPlay-2-only receiver with HAP pairing and PTP is available (with
    /// a PIN or without), and so is one timed by NTP (no bit 41); one limited to its home's
    /// members, or admitting FairPlay senders only, says why not, whatever else it offers.
    @Test func theFeaturesSayWhyAReceiverCannotBePlayedTo() async throws {
        let (transport, system) = try await rig()
        transport.send(.appeared(airPlay("HomePod", deviceID: "10:00:00:00:00:01", model: "AudioAccessory5,1", txt: ["features": "0x405F4A00,0x18340", "flags": "0x4"])))
        transport.send(.appeared(airPlay("Family Only", deviceID: "10:00:00:00:00:02", txt: ["features": "0x405F4A00,0x18340", "acl": "1"])))
        transport.send(.appeared(raop("100000000003@FairPlay Box", txt: ["cn": "1", "et": "0", "ft": "0x4A00"])))
        transport.send(.appeared(airPlay("FairPlay Box", deviceID: "10:00:00:00:00:03", txt: ["features": "0x4A00"])))
        transport.send(.appeared(airPlay("TV With PIN", deviceID: "10:00:00:00:00:04", txt: ["features": "0x405F4A00,0x18340", "flags": "0xC"])))
        transport.send(.appeared(airPlay("NTP Speaker", deviceID: "10:00:00:00:00:05", txt: ["features": "0x405F4A00,0x10140"])))
        #expect(await eventually { await system.devicesList.count == 5 })
        let reasons = Dictionary(uniqueKeysWithValues: await system.devicesList.map { ($0.displayName, $0.members.first?.device.unavailableReason) })
        #expect(reasons["HomePod"] == .some(nil), "AirPlay 2 alone, transient pairing and PTP: available \(reasons)")
        #expect(reasons["TV With PIN"] == .some(nil), "a PIN is asked for when activating \(reasons)")
        #expect(reasons["NTP Speaker"] == .some(nil), "AirPlay 2 timed by NTP: available \(reasons)")
        let key = try #require(await system.devicesList.first { $0.displayName == "HomePod" }?.members.first?.key)
        let homePod = try #require(await system.reportedDevice(for: key))
        #expect(RAOPExtension.airPlay2Timing(of: homePod) == .ptp)
        let ntpKey = try #require(await system.devicesList.first { $0.displayName == "NTP Speaker" }?.members.first?.key)
        let ntpSpeaker = try #require(await system.reportedDevice(for: ntpKey))
        #expect(RAOPExtension.airPlay2Timing(of: ntpSpeaker) == .ntp)
        #expect(reasons["Family Only"]??.contains("members of its home") == true, "\(reasons)")
        #expect(reasons["FairPlay Box"]??.contains("FairPlay") == true, "\(reasons)")
        await system.shutdown()
    }

    /// `[lan] airplay-protocols` overrides what `features` say, by name or hardware address; a
    /// choice the receiver has no service for is a reason to be unavailable, not a failed route.
    @Test func theConfigurationChoosesTheProtocolPerDevice() {
        let homePodRAOP = raop("100000000001@HomePod", txt: ["cn": "0,1", "et": "0", "ft": "0x405F4A00,0x18340"])
        let homePod = airPlay("HomePod", deviceID: "10:00:00:00:00:01", txt: ["features": "0x405F4A00,0x18340"])
        let asFeaturesSay = RAOPExtension.device(for: [homePodRAOP, homePod])
        #expect(asFeaturesSay.map { RAOPExtension.airPlay2Timing(of: $0) } == .ptp)
        let first = RAOPExtension.device(for: [homePodRAOP, homePod], choices: ["HomePod": .airPlay1])
        #expect(first?.unavailableReason == nil)
        let byAddress = RAOPExtension.device(for: [homePodRAOP, homePod], choices: ["10:00:00:00:00:01": .airPlay2NTP])
        #expect(byAddress?.unavailableReason == nil && byAddress.map { RAOPExtension.airPlay2Timing(of: $0, choice: .airPlay2NTP) } == .ntp)
        // AirPlay 2 alone, set to AirPlay 1: nothing to play to.
        let alone = RAOPExtension.device(for: [homePod], choices: ["HomePod": .airPlay1])
        #expect(alone?.unavailableReason?.contains("set to AirPlay 1") == true, "\(String(describing: alone?.unavailableReason))")
        // AirPlay 1 alone, set to AirPlay 2: likewise.
        let old = RAOPExtension.device(for: [raop("100000000002@Old", txt: ["cn": "0,1", "et": "0"])], choices: ["Old": .airPlay2])
        #expect(old?.unavailableReason?.contains("set to AirPlay 2") == true, "\(String(describing: old?.unavailableReason))")
        // A receiver without bit 48 is AirPlay 1 by default; set to AirPlay 2 it is, timed as its bit 41 says.
        let plain = airPlay("Plain", deviceID: "10:00:00:00:00:03", txt: ["features": "0x1A00,0x200"])
        #expect(RAOPExtension.device(for: [plain])?.unavailableReason?.contains("bit 48") == true)
        let forced = RAOPExtension.device(for: [plain], choices: ["Plain": .airPlay2])
        #expect(forced?.unavailableReason == nil && forced.map { RAOPExtension.airPlay2Timing(of: $0, choice: .airPlay2) } == .ptp)
        // The configuration takes exactly these names.
        #expect(DaemonConfiguration.airPlayProtocolNames == AirPlayProtocolChoice.allCases.map(\.rawValue))
    }
}
