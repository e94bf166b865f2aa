import Foundation
@testable import Coordination
import IPNetwork
import MediaRouteTestSupport
import Synchronization
import Testing

/// A LAN host without the household key against the coordination medium: it cannot replay what
/// it recorded, and a made-up box found over mDNS gets a few challenges, not a datagram a second.
@Suite(.timeLimit(.minutes(1))) struct HouseholdMediumAttackTests {
    @Test func aSequenceNumberIsAcceptedOnceAndOldOnesAreRefused() {
        var window = ReplayWindow(instance: 7, highest: 100)
        // The sequence numbers as they arrive, and whether each was taken.
        let arrivals: [(UInt64, Bool)] = [
            (100, false),  // the verifying datagram itself cannot be replayed
            (102, true), (101, true),  // out of order, once
            (101, false), (102, false),
            (200, true), (136, false),  // older than the last 64
            (137, true), (137, false),
            (UInt64.max, true), (UInt64.max, false),
        ]
        var taken: [Bool] = []
        for (sequence, _) in arrivals { taken.append(window.accept(sequence)) }
        #expect(taken == arrivals.map(\.1))
    }

    @Test func aForgottenBoxIsChallengedAgainAndBelievedOnlyOnceItAnswers() async throws {
        let key = try #require(HouseholdKey(Array("correct horse battery staple".utf8)))
        let here = try LANCoordinationMedium(binding: UDPAddress(host: "127.0.0.1", port: 0), peers: [], clockInterval: .milliseconds(100), key: key)
        let there = try LANCoordinationMedium(binding: UDPAddress(host: "127.0.0.1", port: 0), peers: [], clockInterval: .milliseconds(100), key: key)
        _ = await here.join(ParticipantID("here"))
        _ = await there.join(ParticipantID("there"))
        await here.setPeers([there.localAddress])
        await there.setPeers([here.localAddress])
        #expect(await eventually(timeout: .seconds(5)) { await here.verifiedPeers == [there.localAddress] })
        #expect(await here.forgetVerification(of: there.localAddress))
        #expect(await !here.forgetVerification(of: UDPAddress(host: "127.0.0.1", port: 9)), "a box never verified")
        #expect(await eventually(timeout: .seconds(5)) { await here.verifiedPeers == [there.localAddress] }, "challenged again, it answers")
        #expect(await eventually(timeout: .seconds(5)) { await here.clockEstimates()[there.localAddress] != nil })
        await here.leave(ParticipantID("here"))
        await there.leave(ParticipantID("there"))
    }

    @Test func aMadeUpBoxGetsOnlyChallengesAndEverFewerOfThem() async throws {
        let key = try #require(HouseholdKey(Array("correct horse battery staple".utf8)))
        let box = try LANCoordinationMedium(
            binding: UDPAddress(host: "127.0.0.1", port: 0), peers: [], clockInterval: .milliseconds(100), key: key)
        let fake = try UDPSocket(binding: UDPAddress(host: "127.0.0.1", port: 0))
        let received = Mutex<[[UInt8]]>([])
        let reader = Task { for await datagram in fake.datagrams { received.withLock { $0.append(datagram.bytes) } } }
        defer {
            reader.cancel()
            fake.close()
        }
        let stream = await box.join(ParticipantID("box"))
        _ = stream
        await box.setPeers([fake.localAddress])
        try await Task.sleep(for: .seconds(3))
        let count = received.withLock { $0.count }
        // One a clock interval would be 30; with the pause doubling from 200 ms: 0, 0.2, 0.6, 1.4, 3.0 s.
        #expect(count >= 2 && count <= 5, "\(count) datagrams to a box that never answered")
        #expect(await box.verifiedPeers.isEmpty)
        #expect(await box.clockEstimates().isEmpty)
        // What it received, replayed back to the box, is refused: no answer, no delivery.
        let before = received.withLock { $0.count }
        for datagram in received.withLock({ $0 }) { fake.send(datagram, to: box.localAddress) }
        try await Task.sleep(for: .milliseconds(300))
        #expect(await box.refused >= before)
        #expect(received.withLock { $0.count } <= before + 1)
        await box.leave(ParticipantID("box"))
    }
}

/// The fuzz harness's seeds are datagrams the medium reads (so mutations start from real ones).
@Suite struct HouseholdDatagramSeedTests {
    @Test func theSeedsAreEnvelopesTheMediumReads() throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fuzz/Corpus/household-datagram")
        for name in ["challenge", "response", "clock-request", "clock-reply", "ack"] {
            let bytes = try [UInt8](Data(contentsOf: directory.appendingPathComponent(name)))
            #expect(LANCoordinationMedium.open(bytes, key: nil)?.instance == 7, "\(name)")
            let key = try #require(HouseholdKey(Array("correct horse battery staple".utf8)))
            #expect(LANCoordinationMedium.open(key.seal(bytes), key: key)?.kind == LANCoordinationMedium.open(bytes, key: nil)?.kind)
            #expect(LANCoordinationMedium.open(bytes, key: key) == nil, "unsealed under a key")
        }
    }
}
