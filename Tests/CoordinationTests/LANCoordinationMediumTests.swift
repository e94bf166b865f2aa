import Coordination
import IPNetwork
import MediaClock
import MediaDevice
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

    init() async throws {
        mediumA = try LANCoordinationMedium(binding: UDPAddress(host: "127.0.0.1", port: 0), peers: [], clockInterval: .milliseconds(100))
        mediumB = try LANCoordinationMedium(binding: UDPAddress(host: "127.0.0.1", port: 0), peers: [], clockInterval: .milliseconds(100))
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
