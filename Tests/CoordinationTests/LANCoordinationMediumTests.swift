import Coordination
import IPNetwork
import MediaClock
import MediaDevice
import RoutingModel
import MediaRouteTestSupport
import Testing

/// Two boxes on loopback addresses, each with its own medium and coordinator.
struct TwoBoxes {
    let mediumA: LANCoordinationMedium
    let mediumB: LANCoordinationMedium
    let a: PlaybackCoordinator
    let b: PlaybackCoordinator
    let playerA = PlaybackControl()
    let playerB = PlaybackControl()

    /// - Parameter keys: each box's household key (none: datagrams unauthenticated).
    init(keys: (HouseholdKey?, HouseholdKey?) = (nil, nil)) async throws {
        mediumA = try LANCoordinationMedium(binding: UDPAddress(host: "127.0.0.1", port: 0), peers: [], clockInterval: .milliseconds(100), key: keys.0)
        mediumB = try LANCoordinationMedium(binding: UDPAddress(host: "127.0.0.1", port: 0), peers: [], clockInterval: .milliseconds(100), key: keys.1)
        await mediumA.setPeers([mediumB.localAddress])
        await mediumB.setPeers([mediumA.localAddress])
        for player in [playerA, playerB] { player.update { $0.state = .paused; $0.timeRange = 0...3600 } }
        let clock = SystemHostClock()
        a = PlaybackCoordinator(participant: ParticipantID("box-a"), itemID: "movie", playback: playerA, medium: mediumA, clock: clock)
        b = PlaybackCoordinator(participant: ParticipantID("box-b"), itemID: "movie", playback: playerB, medium: mediumB, clock: clock)
        await a.start()
        await b.start()
    }

    func stop() async {
        await a.stop()
        await b.stop()
    }
}

@Suite(.timeLimit(.minutes(1))) struct LANCoordinationMediumTests {
    @Test func twoBoxesPlayInStepOverUDP() async throws {
        let boxes = try await TwoBoxes()
        await boxes.a.seek(to: 120)
        #expect(await eventually { boxes.playerB.currentPlaybackPosition == 120 })
        await boxes.a.play()
        #expect(await eventually { boxes.playerB.isPlaying })
        #expect(abs(boxes.playerA.currentPlaybackPosition - boxes.playerB.currentPlaybackPosition) < 0.020)
        await boxes.b.pause()
        #expect(await eventually { !boxes.playerA.isPlaying })
        #expect(abs(boxes.playerA.currentPlaybackPosition - boxes.playerB.currentPlaybackPosition) < 0.001)
        await boxes.stop()
    }

    /// Boxes of one household (one key) coordinate; a box with another key is not heard:
    /// its commands and clock samples are dropped unread.
    @Test func onlyBoxesWithTheHouseholdKeyAreHeard() async throws {
        let key = try #require(HouseholdKey(Array("correct horse battery staple".utf8)))
        let other = try #require(HouseholdKey(Array("another household's secret".utf8)))
        let household = try await TwoBoxes(keys: (key, key))
        await household.a.seek(to: 42)
        #expect(await eventually { household.playerB.currentPlaybackPosition == 42 })
        #expect(await eventually { await !household.mediumA.clockEstimates().isEmpty })
        #expect(await household.mediumB.unauthenticated == 0)
        await household.stop()

        let strangers = try await TwoBoxes(keys: (key, other))
        await strangers.a.seek(to: 42)
        #expect(await eventually { await strangers.mediumB.unauthenticated > 0 })
        try await Task.sleep(for: .milliseconds(300))
        #expect(strangers.playerB.currentPlaybackPosition == 0, "a command under another key does nothing")
        #expect(await strangers.mediumB.clockEstimates().isEmpty)
        #expect(await strangers.mediumA.clockEstimates().isEmpty)
        await strangers.stop()
        // Unkeyed datagrams are not heard by a keyed box either.
        let mixed = try await TwoBoxes(keys: (nil, key))
        await mixed.a.seek(to: 42)
        #expect(await eventually { await mixed.mediumB.unauthenticated > 0 })
        #expect(mixed.playerB.currentPlaybackPosition == 0)
        await mixed.stop()
    }

    @Test func hmacSHA256MatchesRFC4231() throws {
        func hex(_ bytes: [UInt8]) -> String { bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined() }
        #expect(hex(HouseholdKey.sha256(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let one = try #require(HouseholdKey([UInt8](repeating: 0x0b, count: 20)))
        #expect(hex(one.tag(Array("Hi There".utf8))) == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        let long = try #require(HouseholdKey([UInt8](repeating: 0xaa, count: 131)))
        #expect(hex(long.tag(Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)))
            == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
        let sealed = one.seal([1, 2, 3])
        #expect(one.open(sealed) == [1, 2, 3])
        var tampered = sealed
        tampered[1] ^= 1
        #expect(one.open(tampered) == nil && one.open([1, 2]) == nil)
        #expect(HouseholdKey(Array("short".utf8)) == nil, "a key of fewer than 16 bytes is refused")
    }

    @Test func commandsSurviveLossAndArriveOnce() async throws {
        let boxes = try await TwoBoxes()
        await boxes.mediumA.dropEvery(2)
        await boxes.mediumB.dropEvery(3)
        for position in stride(from: 10.0, through: 100, by: 10) { await boxes.a.seek(to: position) }
        #expect(await eventually { boxes.playerB.currentPlaybackPosition == 100 })
        #expect(await eventually { await boxes.mediumA.unacknowledged == 0 })
        await boxes.stop()
    }

    @Test func eachPeerGetsAClockEstimate() async throws {
        let boxes = try await TwoBoxes()
        let peer = boxes.mediumB.localAddress
        // Low-round-trip samples come in within a few tenths of a second, even on a busy machine.
        #expect(await eventually(timeout: .seconds(10)) { (await boxes.mediumA.clockEstimates()[peer]?.errorBound ?? 1) < 0.002 })
        let estimate = try #require(await boxes.mediumA.clockEstimates()[peer])
        // Same machine, same clock: the true offset is 0, and the bound must cover the error.
        #expect(abs(estimate.offset) <= estimate.errorBound + 0.0002)
        await boxes.stop()
    }

    @Test func malformedDatagramsAreIgnored() async throws {
        let boxes = try await TwoBoxes()
        let stranger = try UDPSocket(binding: UDPAddress(host: "127.0.0.1", port: 0))
        stranger.send(Array("{\"not\": \"a datagram\"".utf8), to: boxes.mediumB.localAddress)
        stranger.send([UInt8](repeating: 0xFF, count: 2000), to: boxes.mediumB.localAddress)
        await boxes.a.seek(to: 7)
        #expect(await eventually { boxes.playerB.currentPlaybackPosition == 7 })
        stranger.close()
        await boxes.stop()
    }
}
