import Coordination
import ExtensionCatalogue
import Foundation
import LANTransport
import MediaClock
import MediaDevice
import MediaRouteTestSupport
@testable import RAOPExtension
import RouteSystem
import RoutingModel
import Testing
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// The test receiver's `_airplay._tcp` record (AirPlay 2 alone, as LG TVs and shairport-sync 5's
/// `_airplay._tcp`), as mDNS would give it (``FixedEndpointsTransport`` announces it).
enum FixedAirPlayTransport {
    /// shairport-sync 5.2.1's features with metadata (bits 9, 15–17 artwork, progress, text, 38, 40, 41 PTP, 48 HAP pairing); `flags` 0xC asks for a PIN.
    /// `ntp`: without bit 41 (PTP), as a receiver timed by NTP announces.
    static func endpoint(for receiver: AirPlay2ReceiverPeer, name: String, pin: Bool = false, ntp: Bool = false) -> Endpoint {
        Endpoint(
            id: "\(name)._airplay._tcp.local", transport: "lan", address: .ip(host: receiver.address, port: UInt16(receiver.port), interface: "lo"), name: name,
            attributes: [
                "deviceid": receiver.identifier, "model": "ShairportSync", "features": ntp ? "0x405FCA00,0x18140" : "0x405FCA00,0x18340", "flags": pin ? "0xC" : "0x4",
                "serviceType": "_airplay._tcp",
            ],
            services: ["_airplay._tcp"])
    }
}

/// AirPlay 2 against the test receiver (Tests/Peers/airplay2_receiver.py): HAP pairing from
/// kept libraries on its side, SETUP with binary property lists, audio sealed per packet, PTP
/// from our master to its follower. Each test has its own receiver address and PTP ports.
/// One at a time (`.serialized`), as the AirPlay 1 receiver tests: five real-time streams and
/// their receivers at once on two busy cores starve the writers (delivery then underruns).
@Suite(.timeLimit(.minutes(2)), .enabled(if: AirPlay2ReceiverPeer.available() && FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg")), .serialized)
struct AirPlay2StreamTests {
    struct Rig {
        let receiver: AirPlay2ReceiverPeer
        let timing: PTPTimingService
        let system: RouteSystem
        let recorder: EventRecorder
        let keys: String

        func device() async throws -> SystemDevice {
            #expect(await eventually(timeout: .seconds(5)) { await system.devicesList.contains { $0.displayName == "Den AirPlay 2" } })
            return try #require(await system.devicesList.first { $0.displayName == "Den AirPlay 2" })
        }

        /// Waits for the receiver's recording of the stream that just ended (deactivating the route
        /// unless `keep`), and checks the tone in it, allowing for what delivery says it missed.
        func recordedTone(_ session: MediaOutputSession, keep: Bool = false, sourceLocation: SourceLocation = #_sourceLocation) async throws
            -> (pcm: [UInt8], times: [(rtp: UInt32, playTime: Int64?, arrival: Int64)], line: [String: Any])
        {
            #expect(await eventually(timeout: .seconds(15)) { receiver.event("recording") != nil }, "\(receiver.events.suffix(8))", sourceLocation: sourceLocation)
            let delivered = await system.audioStatistics(on: session)
            if !keep { await system.deactivate(session) }
            let recording = try #require(receiver.recording(), "\(receiver.events.suffix(4))", sourceLocation: sourceLocation)
            expectToneIntact(recording.pcm, underruns: Int(delivered?.underruns ?? 0), "\(recording.line)", sourceLocation: sourceLocation)
            return recording
        }

        func stop() async {
            await system.shutdown()
            receiver.stop()
            try? FileManager.default.removeItem(atPath: keys)
        }
    }

    /// `slot` keeps tests apart: the receiver at 127.0.0.(10 + slot), PTP on ports of its own.
    /// `timing`: the receiver's (`ptp`, `grandmaster`, `ntp`; see ``AirPlay2ReceiverPeer``).
    func makeRig(
        slot: Int, pin: String? = nil, latency: Duration = .seconds(1), timing receiverTiming: String = "ptp", protocols: [String: AirPlayProtocolChoice] = [:],
        eventFlood: Int = 0
    ) async throws -> Rig {
        let ptpPort = UInt16(47_300 + 2 * slot)
        let receiver = try AirPlay2ReceiverPeer(pin: pin, address: "127.0.0.\(10 + slot)", ptpPort: ptpPort, timing: receiverTiming, eventFlood: eventFlood)
        var configuration = PTPMaster.Configuration()
        configuration.bindAddress = "127.0.0.1"
        configuration.eventPort = ptpPort
        configuration.generalPort = ptpPort + 1
        let timing = PTPTimingService(clock: SystemHostClock(), configuration: configuration)
        let keys = NSTemporaryDirectory() + "mr-airplay2-keys-\(UUID().uuidString.prefix(8))"
        let transport = FixedEndpointsTransport(endpoints: [
            FixedAirPlayTransport.endpoint(for: receiver, name: "Den AirPlay 2", pin: pin != nil, ntp: receiverTiming == "ntp"),
        ])
        let system = RouteSystem()
        let recorder = await EventRecorder(system)
        try await system.load { manager in
            RAOPExtension(
                transport: transport, routingManager: manager, latency: latency, timing: PTPAirPlayTiming(service: timing), pairingKeysDirectory: keys, protocols: protocols)
        }
        await system.beginDiscovery(client: "test")
        return Rig(receiver: receiver, timing: timing, system: system, recorder: recorder, keys: keys)
    }

    @Test func aToneReachesTheReceiverIntactPairedEncryptedAndPTPTimed() async throws {
        let rig = try await makeRig(slot: 1)
        let device = try await rig.device()
        #expect(device.isAvailable, "AirPlay 2 alone, transient pairing, PTP: available")
        let route = try await rig.system.activate(deviceID: device.id)
        #expect(rig.receiver.event("paired")?["paired"] as? String == "transient")
        let details = await rig.system.routeStatus(on: route.session)?.details
        #expect(details?.protocolVersion == "AirPlay 2" && details?.timing == .ptp, "\(String(describing: details))")
        try await rig.system.setVolume(0.8, on: route.session)
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let writer = writeOnOwnThread(tone(seconds: 3), to: acquisition.descriptor, piece: 4_096)
        #expect(await writer.value)
        // The writer's end stops the samples: what was sent plays out, then TEARDOWN (the receiver records then).
        let recording = try await rig.recordedTone(route.session)
        #expect(recording.line["bad"] as? Int == 0, "every packet opened with the stream key")
        // Nothing lost on the way: every packet from the first to the last arrived, and the last
        // came before TEARDOWN (only what did not fill a whole packet stays behind).
        #expect(recording.line["missing"] as? Int == 0, "\(recording.line)")
        #expect(recording.pcm.count / 4 >= 44_100 * 3 - 352, "three seconds: \(recording.pcm.count / 4) frames")

        // Every request after pairing came encrypted; the session and stream were set up as shairport-sync 5 wants.
        let requests = rig.receiver.events.filter { $0["method"] != nil }
        #expect(requests.filter { ($0["path"] as? String)?.hasPrefix("/pair") != true }.allSatisfy { $0["encrypted"] as? Bool == true })
        let session = try #require(rig.receiver.event("setup"))
        #expect(session["timingProtocol"] as? String == "PTP")
        #expect((session["clock"] as? NSNumber)?.int64Value == Int64(bitPattern: rig.timing.clockIdentity), "the timing peer is our master")
        let stream = try #require(rig.receiver.events.first { $0["setup"] as? String == "stream" })
        #expect(stream["type"] as? Int == 96 && stream["ct"] as? Int == 2 && stream["keyLength"] as? Int == 32 && stream["spf"] as? Int == 352)
        let peers = rig.receiver.event("peers")?["peers"] as? [String]
        #expect(peers?.first == "127.0.0.1" && peers?.contains(rig.receiver.address) == true, "we are the first peer, nqptp's master: \(String(describing: peers))")
        #expect(rig.receiver.events.contains { $0["parameter"] as? String == "volume" && $0["value"] as? String == "-6.000000" }, "0.8 is −6 dB")
        #expect(requests.contains { $0["path"] as? String == "/feedback" }, "feedback keeps the session")
        // The event channel: connected with the pairing's events keys, its request answered.
        #expect(rig.receiver.event("events_connected") != nil)
        #expect(rig.receiver.event("event_reply")?["event_reply"] as? String == "RTSP/1.0 200 OK" && rig.receiver.event("event_reply")?["cseq"] as? Bool == true,
                "\(String(describing: rig.receiver.event("event_reply")))")
        #expect(requests.contains { $0["method"] as? String == "TEARDOWN" })

        // PTP: the receiver followed our master, and the sync packets name it.
        let clockHex = String(format: "%016llx", rig.timing.clockIdentity)
        #expect(rig.receiver.events.contains { $0["ptp"] as? String == clockHex }, "\(rig.receiver.events.filter { $0["ptp"] != nil || $0["announce"] != nil }.prefix(3))")
        let syncs = rig.receiver.events.filter { $0["sync"] != nil }
        #expect(!syncs.isEmpty && syncs.allSatisfy { $0["clock"] as? String == clockHex })
        #expect(syncs.first?["first"] as? Bool == true)
        // Each packet leaves when delivery reaches its first frame; by the receiver's reading of our PTP
        // clock and sync packets it is meant to play the stream's latency (1 s) after that: never
        // later, earlier only by how late the packet left (the first ones wait for the stream's
        // setup; a loaded box). The packets that left on time show the latency itself.
        let leads = recording.times.compactMap { time in time.playTime.map { Double($0 - time.arrival) / 1e9 } }
        let longest = leads.max() ?? 0
        #expect(leads.count > 300 && longest > 0.95 && longest <= 1.005, "packets are meant to play at most \(longest) s after they arrived; the latency is 1 s")
        #expect(await eventually(timeout: .seconds(3)) { rig.timing.followers.isEmpty }, "the master stops with the stream")
        await rig.stop()
    }

    /// Each packet leaves when delivery reaches its first frame; by the receiver's reading of the
    /// clock its stream is timed by and of the sync packets, it is meant to play the stream's
    /// latency (1 s) after that: never later, earlier only by how late the packet left.
    /// `earliest`: the least the longest lead may be (a buffered stream's packets leave two AAC
    /// units, 46 ms, after their first frame was delivered: the encoder holds one back).
    func expectPlayTimesOneSecondAfterArrival(
        _ times: [(rtp: UInt32, playTime: Int64?, arrival: Int64)], from first: Int = 0, earliest: Double = 0.95, packets: Int = 100, _ context: String = ""
    ) {
        let leads = times.dropFirst(first).compactMap { time in time.playTime.map { Double($0 - time.arrival) / 1e9 } }
        let longest = leads.max() ?? 0
        #expect(leads.count > packets && longest > earliest && longest <= 1.005, "packets are meant to play at most \(longest) s after they arrived; the latency is 1 s \(context)")
    }

    /// A buffered stream (type 103, `airplay2-buffered`): AAC-LC units over TCP, sealed with the
    /// stream key, the format named by the SSRC as shairport-sync reads it, anchored by
    /// `SETRATEANCHORTIME` on our PTP clock; the tone intact (FFmpeg's AAC decoder at the
    /// receiver) and on time; a pause is `FLUSHBUFFERED`, a resume a new anchor.
    @Test func aBufferedAACStreamPlaysTheToneAnchoredOnOurClock() async throws {
        let rig = try await makeRig(slot: 9, protocols: ["Den AirPlay 2": .airPlay2Buffered])
        let device = try await rig.device()
        let route = try await rig.system.activate(deviceID: device.id)
        let details = await rig.system.routeStatus(on: route.session)?.details
        #expect(details?.protocolVersion == "AirPlay 2 (buffered)" && details?.codec == "AAC-LC" && details?.timing == .ptp, "\(String(describing: details))")
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        #expect(await writeOnOwnThread(tone(seconds: 3), to: acquisition.descriptor, piece: 4_096).value)
        let recording = try await rig.recordedTone(route.session, keep: true)
        #expect(recording.line["bad"] as? Int == 0 && recording.line["missing"] as? Int == 0, "\(recording.line)")
        #expect(recording.line["ssrcs"] as? [Int] == [0x1600_0000], "AAC/44100/F24/2 by its SSRC: \(recording.line)")
        let stream = try #require(rig.receiver.events.first { $0["setup"] as? String == "stream" })
        #expect(stream["type"] as? Int == 103 && stream["ct"] as? Int == 4 && stream["spf"] as? Int == 1_024 && stream["audioFormat"] as? Int == 0x40_0000)
        let anchors = rig.receiver.events.filter { $0["rate"] != nil }
        #expect(anchors.first?["rate"] as? Int == 1 && anchors.first?["clock"] as? String == String(format: "%016llx", rig.timing.clockIdentity), "\(anchors)")
        #expect(rig.receiver.events.filter { $0["sync"] != nil }.isEmpty, "no sync packets: the anchor times it")
        expectPlayTimesOneSecondAfterArrival(recording.times, earliest: 0.9, packets: 60)

        // Again, paused and resumed: FLUSHBUFFERED, then a new anchor.
        let again = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let writer = writeOnOwnThread(tone(seconds: 4), to: again.descriptor, piece: 4_096)
        try await Task.sleep(for: .seconds(1))
        try await rig.system.pauseAudio(on: route.session)
        #expect(await eventually(timeout: .seconds(5)) { rig.receiver.event("flush_buffered") != nil }, "\(rig.receiver.events.suffix(4))")
        try await Task.sleep(for: .milliseconds(300))
        try await rig.system.resumeAudio(on: route.session)
        #expect(await writer.value)
        #expect(await eventually(timeout: .seconds(5)) { rig.receiver.events.filter { $0["rate"] as? Int == 1 }.count >= 3 }, "\(rig.receiver.events.filter { $0["rate"] != nil })")
        await rig.system.deactivate(route.session)
        await rig.stop()
    }

    /// A receiver that announces no PTP (features bit 41) gets an NTP-timed AirPlay 2 session:
    /// our timing port in SETUP, no SETPEERS, no PTP master; its timing requests answered, the
    /// sync packets in NTP time; the tone intact and on time.
    @Test func aReceiverTimedByNTPGetsAnNTPSessionAndPlaysOnTime() async throws {
        let rig = try await makeRig(slot: 5, timing: "ntp")
        let device = try await rig.device()
        #expect(device.isAvailable, "AirPlay 2 timed by NTP is played")
        let route = try await rig.system.activate(deviceID: device.id)
        let details = await rig.system.routeStatus(on: route.session)?.details
        #expect(details?.protocolVersion == "AirPlay 2" && details?.timing == .ntp, "\(String(describing: details))")
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        #expect(await writeOnOwnThread(tone(seconds: 3), to: acquisition.descriptor, piece: 4_096).value)
        let recording = try await rig.recordedTone(route.session)
        #expect(recording.line["bad"] as? Int == 0 && recording.line["missing"] as? Int == 0, "\(recording.line)")
        #expect(rig.receiver.event("setup")?["timingProtocol"] as? String == "NTP")
        #expect(rig.receiver.event("peers") == nil, "no SETPEERS without PTP")
        #expect(rig.receiver.event("ntp") != nil, "its timing requests were answered: \(rig.receiver.events.suffix(6))")
        let syncs = rig.receiver.events.filter { $0["sync"] != nil }
        #expect(!syncs.isEmpty && syncs.allSatisfy { $0["clock"] as? String == "ntp" })
        #expect(rig.timing.statistics == nil && rig.timing.followers.isEmpty, "the PTP master never opened")
        expectPlayTimesOneSecondAfterArrival(recording.times)
        await rig.stop()
    }

    /// A receiver that insists on being grandmaster (a better Announce, as HomePodOS 27 is
    /// reported to send) on a clock far from ours: the master stops sending it Syncs, follows its
    /// clock, and the sync packets name its clock and carry its time — the tone plays on time by it.
    @Test func aReceiverThatInsistsOnBeingGrandmasterTimesItsStreamByItsOwnClock() async throws {
        let rig = try await makeRig(slot: 6, timing: "grandmaster")
        let device = try await rig.device()
        let route = try await rig.system.activate(deviceID: device.id)
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let writer = writeOnOwnThread(tone(seconds: 3), to: acquisition.descriptor, piece: 4_096)
        // While it plays: its clock followed both ways (the master closes with the stream).
        #expect(await eventually(timeout: .seconds(5)) { (rig.timing.statistics?.foreignSyncs ?? 0) > 8 && (rig.timing.statistics?.delayRequests ?? 0) > 8 })
        #expect(await writer.value)
        let recording = try await rig.recordedTone(route.session)
        let grandmaster = try #require(rig.receiver.event("grandmaster")?["grandmaster"] as? String)
        let syncs = rig.receiver.events.filter { $0["sync"] != nil }
        #expect(!syncs.isEmpty && syncs.allSatisfy { $0["clock"] as? String == grandmaster }, "every sync packet names its clock: \(syncs.prefix(2))")
        // Our Syncs stop once its Announce came (it announces when the session is set up).
        #expect((recording.line["foreign_syncs"] as? Int ?? .max) <= 8, "\(recording.line)")
        expectPlayTimesOneSecondAfterArrival(recording.times)
        await rig.stop()
    }

    /// nqptp restarted mid-stream: the receiver's follower forgets our clock for a second; our
    /// master goes on serving it, it follows again, and what arrives after plays on time.
    @Test func theReceiversPTPFollowerRestartedMidStreamFollowsAgainAndTheStreamPlaysOn() async throws {
        let rig = try await makeRig(slot: 7)
        let device = try await rig.device()
        let route = try await rig.system.activate(deviceID: device.id)
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let writer = writeOnOwnThread(tone(seconds: 6), to: acquisition.descriptor, piece: 4_096)
        #expect(await eventually(timeout: .seconds(10)) { rig.receiver.event("first_packet") != nil })
        try await Task.sleep(for: .seconds(1))
        try rig.receiver.restartPTP()
        #expect(await writer.value)
        let recording = try await rig.recordedTone(route.session)
        #expect(recording.line["missing"] as? Int == 0, "\(recording.line)")
        let events = rig.receiver.events
        let restart = try #require(events.firstIndex { $0["ptp_restart"] != nil })
        #expect(events[restart...].contains { ($0["follow_ups"] as? Int ?? 0) >= 8 }, "it follows our master again after the restart")
        // From two seconds after the restart (the restart at about one second in, then a second closed): on time again.
        expectPlayTimesOneSecondAfterArrival(recording.times, from: 125 * 4, "after the restart")
        await rig.stop()
    }

    /// An AirPlay 1 receiver that refuses ANNOUNCE until `POST /auth-setup` (AirPort Express 7.8,
    /// Sonos; `et` lists 4): it gets the flag and a Curve25519 key after OPTIONS, then plays.
    @Test func anAirPlay1ReceiverThatWantsAuthSetupGetsItAndPlays() async throws {
        let receiver = try AirPlay2ReceiverPeer(identifier: "4F:8A:22:10:9C:18", address: "127.0.0.18", raop: true, authSetup: true)
        defer { receiver.stop() }
        let endpoint = Endpoint(
            id: "4F8A22109C18@Porch Express._raop._tcp.local", transport: "lan", address: .ip(host: receiver.address, port: UInt16(receiver.port), interface: "lo"),
            name: "4F8A22109C18@Porch Express", attributes: ["et": "0,4", "cn": "0,1", "am": "AirPort10,115", "serviceType": "_raop._tcp"], services: ["_raop._tcp"])
        let system = RouteSystem()
        try await system.load { manager in RAOPExtension(transport: FixedEndpointsTransport(endpoints: [endpoint]), routingManager: manager, latency: .seconds(1)) }
        await system.beginDiscovery(client: "test")
        #expect(await eventually(timeout: .seconds(5)) { await system.devicesList.contains { $0.displayName == "Porch Express" } })
        let device = try #require(await system.devicesList.first { $0.displayName == "Porch Express" })
        let route = try await system.activate(deviceID: device.id)
        #expect(await system.routeStatus(on: route.session)?.details.protocolVersion == "AirPlay 1 (RAOP)")
        let acquisition = try await system.acquireAudio(on: route.session, format: .cdAudio)
        #expect(await writeOnOwnThread(tone(seconds: 3), to: acquisition.descriptor, piece: 4_096).value)
        #expect(await eventually(timeout: .seconds(15)) { receiver.event("recording") != nil }, "\(receiver.events.suffix(8))")
        let delivered = await system.audioStatistics(on: route.session)
        await system.deactivate(route.session)
        let recording = try #require(receiver.recording(), "\(receiver.events.suffix(4))")
        expectToneIntact(recording.pcm, underruns: Int(delivered?.underruns ?? 0), "\(recording.line)")
        let events = receiver.events
        let authSetup = try #require(events.firstIndex { $0["auth_setup"] != nil }, "\(events.prefix(6))")
        #expect(events[authSetup]["auth_setup"] as? Int == 33 && events[authSetup]["flag"] as? Int == 1, "the flag and a 32-byte key")
        #expect(events.firstIndex { $0["announce"] != nil }.map { $0 > authSetup } == true && !events.contains { $0["refused"] != nil })
        expectPlayTimesOneSecondAfterArrival(recording.times)
        await system.shutdown()
    }

    /// An Apple TV that wants device verification (tvOS 10.2 on: `OPTIONS` refused 403): it is
    /// asked to show a PIN, a wrong PIN fails activation as an authorization error, the right one
    /// pairs (`/pair-setup-pin`, the key kept 0600); the route then proves the key
    /// (`/pair-verify`) and plays. Next time the kept key is proved and nobody is asked; forgotten,
    /// the PIN is asked for again.
    @Test func anAppleTVThatWantsDeviceVerificationIsPairedWithItsPINAndVerifiedNextTime() async throws {
        let receiver = try AirPlay2ReceiverPeer(pin: "5072", identifier: "4F:8A:22:10:9C:21", address: "127.0.0.21", raop: true, verification: true)
        defer { receiver.stop() }
        let endpoint = Endpoint(
            id: "4F8A22109C21@Lounge TV._raop._tcp.local", transport: "lan", address: .ip(host: receiver.address, port: UInt16(receiver.port), interface: "lo"),
            name: "4F8A22109C21@Lounge TV", attributes: ["et": "0,3,5", "cn": "0,1", "am": "AppleTV5,3", "serviceType": "_raop._tcp"], services: ["_raop._tcp"])
        let keys = NSTemporaryDirectory() + "mr-airplay-verification-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: keys) }
        let system = RouteSystem()
        try await system.load { manager in
            RAOPExtension(transport: FixedEndpointsTransport(endpoints: [endpoint]), routingManager: manager, latency: .seconds(1), pairingKeysDirectory: keys)
        }
        await system.beginDiscovery(client: "test")
        #expect(await eventually(timeout: .seconds(5)) { await system.devicesList.contains { $0.displayName == "Lounge TV" } })
        let device = try #require(await system.devicesList.first { $0.displayName == "Lounge TV" })

        let wrong = ScriptedPairingAgent([.code("1111")])
        await system.setPairingAgent(wrong)
        await #expect {
            _ = try await system.activate(deviceID: device.id)
        } throws: { error in
            (error as? MediaDeviceError)?.code == .authorizationFailed
        }
        #expect(wrong.receivedRequests.first?.authorizationMethod == .numericCode(length: .fourCharacter))
        #expect(receiver.event("pin_start") != nil && receiver.events.contains { $0["verification"] as? String == "wrong pin" }, "\(receiver.events.suffix(6))")

        await system.setPairingAgent(ScriptedPairingAgent([.code("5072")]))
        let route = try await system.activate(deviceID: device.id)
        #expect(receiver.events.contains { $0["verification"] as? String == "paired" } && receiver.events.contains { $0["verification"] as? String == "verified" })
        let files = (try? FileManager.default.contentsOfDirectory(atPath: keys)) ?? []
        #expect(files.contains("controller.json") && files.contains { $0.hasPrefix("verified-") }, "\(files)")
        for file in files {
            let attributes = try FileManager.default.attributesOfItem(atPath: keys + "/" + file)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600, "\(file) is readable by its owner only")
        }
        let acquisition = try await system.acquireAudio(on: route.session, format: .cdAudio)
        #expect(await writeOnOwnThread(tone(seconds: 2), to: acquisition.descriptor, piece: 4_096).value)
        #expect(await eventually(timeout: .seconds(15)) { receiver.event("recording") != nil }, "\(receiver.events.suffix(8))")
        let delivered = await system.audioStatistics(on: route.session)
        await system.deactivate(route.session)
        let recording = try #require(receiver.recording(), "\(receiver.events.suffix(4))")
        expectToneIntact(recording.pcm, underruns: Int(delivered?.underruns ?? 0), "\(recording.line)")

        // Next time: the kept key is proved, nobody asked.
        let verifiedBefore = receiver.events.filter { $0["verification"] as? String == "verified" }.count
        let silent = ScriptedPairingAgent([])
        await system.setPairingAgent(silent)
        let again = try await system.activate(deviceID: device.id)
        #expect(silent.receivedRequests.isEmpty)
        #expect(receiver.events.filter { $0["verification"] as? String == "verified" }.count == verifiedBefore + 1)
        await system.deactivate(again.session)

        // `trust` lists it; forgotten, its file goes and the PIN is asked for again.
        let pinned = await system.pinnedIdentities()
        #expect(pinned.contains { $0.kind == .airPlayPairing && $0.name == "Lounge TV" && $0.pinned == "device verification" }, "\(pinned)")
        #expect(try await system.forgetIdentity(named: "Lounge TV") >= 1)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: keys)) ?? []).allSatisfy { !$0.hasPrefix("verified-") })
        let asked = ScriptedPairingAgent([.code("5072")])
        await system.setPairingAgent(asked)
        let third = try await system.activate(deviceID: device.id)
        #expect(asked.receivedRequests.count == 1, "forgotten, it is verified with its PIN again")
        await system.deactivate(third.session)
        await system.shutdown()
    }

    /// `sf` bit 9 says so before `OPTIONS` is refused (Apple TVs announce it).
    @Test func statusFlagsBit9AsksForDeviceVerification() {
        #expect(RAOPExtension.wantsDeviceVerification(["sf": "0x204"]))
        #expect(RAOPExtension.wantsDeviceVerification(["sf": "516"]))
        #expect(!RAOPExtension.wantsDeviceVerification(["sf": "0x4"]))
        #expect(!RAOPExtension.wantsDeviceVerification(["sf": "0xzz"]) && !RAOPExtension.wantsDeviceVerification([:]))
    }

    /// Two receivers as one group: each frame is meant to play at the same instant on both, by
    /// each receiver's reading of our PTP clock and its sync packets (kernel receive times, the
    /// least delayed of the last 16 Follow_Ups, as nqptp keeps them).
    @Test func twoReceiversInAGroupMeanToPlayEachFrameWithin300Microseconds() async throws {
        let ptpPort = UInt16(47_330)
        let kitchen = try AirPlay2ReceiverPeer(identifier: "4F:8A:22:10:9C:14", address: "127.0.0.14", ptpPort: ptpPort)
        let garden = try AirPlay2ReceiverPeer(identifier: "4F:8A:22:10:9C:15", address: "127.0.0.15", ptpPort: ptpPort)
        defer {
            kitchen.stop()
            garden.stop()
        }
        var configuration = PTPMaster.Configuration()
        configuration.bindAddress = "127.0.0.1"
        configuration.eventPort = ptpPort
        configuration.generalPort = ptpPort + 1
        let timing = PTPTimingService(clock: SystemHostClock(), configuration: configuration)
        let transport = FixedEndpointsTransport(endpoints: [
            FixedAirPlayTransport.endpoint(for: kitchen, name: "Kitchen AirPlay 2"), FixedAirPlayTransport.endpoint(for: garden, name: "Garden AirPlay 2"),
        ])
        let system = RouteSystem()
        try await system.load { manager in RAOPExtension(transport: transport, routingManager: manager, latency: .seconds(1), timing: PTPAirPlayTiming(service: timing)) }
        await system.beginDiscovery(client: "test")
        #expect(await eventually(timeout: .seconds(5)) { await system.devicesList.count == 2 })
        var sessions: [MediaOutputSession] = []
        for device in await system.devicesList { sessions.append(try await system.activate(deviceID: device.id).session) }
        let (acquisition, _) = try await system.acquireGroupAudio(on: sessions, format: .cdAudio)
        let writer = writeOnOwnThread(tone(seconds: 4), to: acquisition.descriptor, piece: 4_096)
        #expect(await writer.value)
        let first = sessions[0]
        #expect(await eventually(timeout: .seconds(10)) { await system.audioStatistics(on: first)?.active == false })
        let delivered = await system.audioStatistics(on: first)
        for session in sessions { await system.deactivate(session) }
        #expect(await eventually(timeout: .seconds(10)) { kitchen.event("recording") != nil && garden.event("recording") != nil })
        let recordings = try [kitchen, garden].map { try #require($0.recording(), "\($0.events.suffix(3))") }
        for recording in recordings { expectToneIntact(recording.pcm, underruns: Int(delivered?.underruns ?? 0), "\(recording.line)") }
        // The same packet of each stream carries the same source frames (one delivery, the same first buffer).
        let pairs = zip(recordings[0].times, recordings[1].times).dropFirst(125)  // from the second second on
        let offsets = pairs.compactMap { a, b in a.playTime.flatMap { x in b.playTime.map { abs(Double(x - $0)) / 1_000 } } }
        #expect(offsets.count > 200, "\(offsets.count) packets compared")
        let worst = offsets.max() ?? .infinity
        #expect(worst <= 300, "the receivers mean to play the same frame \(worst) µs apart at worst (p50 \(offsets.sorted()[offsets.count / 2]) µs)")
        await system.shutdown()
    }

    /// A receiver that floods its event channel (500 requests at once after its first): the
    /// channel is closed once over its budget (``EventChannelBudget``: 32, then 8 a second) and
    /// the stream plays on intact.
    @Test func aFloodOnTheEventChannelClosesItAndTheStreamPlaysOn() async throws {
        let rig = try await makeRig(slot: 10, eventFlood: 500)
        let device = try await rig.device()
        let route = try await rig.system.activate(deviceID: device.id)
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let writer = writeOnOwnThread(tone(seconds: 3), to: acquisition.descriptor, piece: 4_096)
        #expect(await eventually(timeout: .seconds(10)) { rig.receiver.event("event_flood") != nil }, "\(rig.receiver.events.suffix(6))")
        let flood = try #require(rig.receiver.event("event_flood"))
        let answered = flood["answered"] as? Int ?? -1
        #expect(flood["closed"] as? Bool == true && (20...40).contains(answered), "the budget's 32 (less the first) and what a second refills: \(flood)")
        #expect(await writer.value)
        _ = try await rig.recordedTone(route.session)
        await rig.stop()
    }

    @Test func aReceiverThatWantsItsPINIsPairedWithItKeepsTheKeysAndVerifiesNextTime() async throws {
        let rig = try await makeRig(slot: 2, pin: "4821")
        let device = try await rig.device()
        #expect(device.isAvailable, "a PIN is asked for, not a reason to list it unavailable")
        let wrong = ScriptedPairingAgent([.code("1111")])
        await rig.system.setPairingAgent(wrong)
        await #expect {
            _ = try await rig.system.activate(deviceID: device.id)
        } throws: { error in
            (error as? MediaDeviceError)?.code == .authorizationFailed
        }
        #expect(wrong.receivedRequests.first?.authorizationMethod == .numericCode(length: .fourCharacter))

        await rig.system.setPairingAgent(ScriptedPairingAgent([.code("4821")]))
        let route = try await rig.system.activate(deviceID: device.id)
        #expect(rig.receiver.event("paired")?["paired"] as? String == "pin")
        let files = (try? FileManager.default.contentsOfDirectory(atPath: rig.keys)) ?? []
        #expect(files.contains("controller.json") && files.contains { $0.hasPrefix("receiver-") }, "\(files)")
        for file in files {
            let attributes = try FileManager.default.attributesOfItem(atPath: rig.keys + "/" + file)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600, "\(file) is readable by its owner only")
        }
        await rig.system.deactivate(route.session)

        // Next time: pair-verify with the kept keys, nobody asked.
        let silent = ScriptedPairingAgent([])
        await rig.system.setPairingAgent(silent)
        let again = try await rig.system.activate(deviceID: device.id)
        #expect(silent.receivedRequests.isEmpty)
        #expect(rig.receiver.event("verified") != nil, "\(rig.receiver.events.suffix(4))")
        await rig.system.deactivate(again.session)

        // `trust` shows the pairing; forgetting it removes its file, and the next use asks for the PIN.
        let pinned = await rig.system.pinnedIdentities()
        #expect(pinned.contains { $0.kind == .airPlayPairing && $0.name == "Den AirPlay 2" && $0.pinned == rig.receiver.identifier }, "\(pinned)")
        #expect(try await rig.system.forgetIdentity(named: "Den AirPlay 2") >= 1)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: rig.keys)) ?? []).allSatisfy { !$0.hasPrefix("receiver-") })
        let asked = ScriptedPairingAgent([.code("4821")])
        await rig.system.setPairingAgent(asked)
        let third = try await rig.system.activate(deviceID: device.id)
        #expect(asked.receivedRequests.count == 1, "forgotten, it is paired with its PIN again")
        await rig.system.deactivate(third.session)
        await rig.stop()
    }

    /// What plays reaches the receiver as for AirPlay 1 (DAAP text, artwork, progress, on the
    /// encrypted channel); a pause is a FLUSH of what it holds, and a resume plays on.
    @Test func metadataArrivesAndAPauseFlushesAndAResumePlaysOn() async throws {
        let rig = try await makeRig(slot: 4)
        let device = try await rig.device()
        let route = try await rig.system.activate(deviceID: device.id)
        try await rig.system.setRealtimeNowPlaying(
            RealtimeNowPlaying(metadata: PlaybackMetadata(title: "Song", artist: "Band", album: "Album", duration: 6), artwork: .init(bytes: AirPlay2StreamTests.artwork), position: 0),
            on: route.session)
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let writer = writeOnOwnThread(tone(seconds: 6), to: acquisition.descriptor, piece: 4_096)
        #expect(await eventually(timeout: .seconds(10)) { rig.receiver.event("first_packet") != nil })
        #expect(await eventually(timeout: .seconds(5)) {
            let metadata = rig.receiver.events.compactMap { $0["metadata"] as? String }
            return metadata.contains("application/x-dmap-tagged") && metadata.contains("image/png")
                && rig.receiver.events.contains { $0["parameter"] as? String == "progress" }
        }, "\(rig.receiver.events.suffix(6))")
        try await Task.sleep(for: .seconds(1))
        try await rig.system.pauseAudio(on: route.session)
        #expect(await eventually(timeout: .seconds(5)) { rig.receiver.event("flush") != nil }, "a pause flushes what the receiver holds")
        try await Task.sleep(for: .milliseconds(500))
        try await rig.system.resumeAudio(on: route.session)
        #expect(await writer.value, "the writer waited through the pause and wrote everything")
        #expect(await eventually(timeout: .seconds(15)) { await rig.system.audioStatistics(on: route.session)?.active == false })
        await rig.system.deactivate(route.session)
        #expect(await eventually(timeout: .seconds(10)) { rig.receiver.event("recording") != nil })
        let recording = try #require(rig.receiver.recording())
        // What was held at the pause is gone; what was written after it plays on, whole.
        #expect(recording.line["bad"] as? Int == 0)
        #expect(recording.pcm.count / 4 > 44_100 * 3, "\(recording.pcm.count / 4) frames after the flush")
        await rig.stop()
    }

    /// A tiny PNG (its signature and an IHDR chunk).
    static let artwork: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + Array("IHDR".utf8) + [0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0]

    @Test func theReceiverKilledMidStreamEndsTheRouteWithAnEvent() async throws {
        let rig = try await makeRig(slot: 3)
        let device = try await rig.device()
        let route = try await rig.system.activate(deviceID: device.id)
        let acquisition = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let writer = writeOnOwnThread(tone(seconds: 20), to: acquisition.descriptor, piece: 4_096, closing: false)
        #expect(await eventually(timeout: .seconds(10)) { rig.receiver.event("first_packet") != nil })
        rig.receiver.stop()
        let reason = await rig.recorder.first(timeout: .seconds(10)) { event -> MediaDeviceError? in
            if case .routeDeactivated(let ended, let reason?) = event, ended.session == route.session { return reason }
            return nil
        }
        #expect(reason?.code == .connectionFailed, "\(String(describing: reason))")
        #expect(await writer.value == false, "the writer's socket closed under it")
        close(acquisition.descriptor)
        #expect(await eventually(timeout: .seconds(3)) { rig.timing.followers.isEmpty }, "the master stops serving a receiver that is gone")
        await rig.stop()
    }
}
