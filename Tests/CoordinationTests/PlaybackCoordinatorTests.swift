import Coordination
import MediaClock
import MediaDevice
import RoutingModel
import MediaRouteTestSupport
import Testing

/// Two participants on one loopback medium with an 80 ms one-way delay.
struct Pair {
    let clock = ManualHostClock(now: .seconds(1000))
    let medium: LoopbackCoordinationMedium
    let a: PlaybackCoordinator
    let b: PlaybackCoordinator
    let playerA: PlaybackControl
    let playerB: PlaybackControl

    init(snaps: Bool = true) async {
        medium = LoopbackCoordinationMedium(clock: clock, delay: .milliseconds(80))
        playerA = PlaybackControl(clock: clock)
        playerB = PlaybackControl(clock: clock)
        for player in [playerA, playerB] { player.update { $0.state = .paused; $0.timeRange = 0...3600 } }
        a = PlaybackCoordinator(participant: ParticipantID("a"), itemID: "movie", playback: playerA, medium: medium,
                                clock: clock, pauseSnapsToMediaTimeOfOriginator: snaps)
        b = PlaybackCoordinator(participant: ParticipantID("b"), itemID: "movie", playback: playerB, medium: medium,
                                clock: clock, pauseSnapsToMediaTimeOfOriginator: snaps)
        await a.start()
        await b.start()
    }

    /// Lets the medium's delay pass on the manual clock.
    func deliver() async {
        await advance(clock, by: .milliseconds(10), upTo: .milliseconds(100)) { false }
    }
}

@Suite(.timeLimit(.minutes(1))) struct PlaybackCoordinatorTests {
    @Test func playPropagatesAndJoinsWhereTheGroupIsNow() async {
        let pair = await Pair()
        pair.playerA.seek(to: 10)
        await pair.a.play()
        await pair.deliver()
        #expect(pair.playerB.isPlaying)
        // B started 80+ ms late but lands where A is.
        #expect(abs(pair.playerB.currentPlaybackPosition - pair.playerA.currentPlaybackPosition) < 0.020)
        let expected = await pair.b.expectedItemTime(atHostTime: pair.clock.now().seconds)
        #expect(abs((expected ?? 0) - pair.playerA.currentPlaybackPosition) < 0.001)
    }

    /// Plays for 5 s, then A pauses; returns where A paused once B heard of it.
    func playThenPause(_ pair: Pair) async -> Double {
        await pair.a.play()
        await pair.deliver()
        pair.clock.advance(by: .seconds(5))
        await pair.a.pause()
        let pausedAt = pair.playerA.currentPlaybackPosition
        await pair.deliver()
        return pausedAt
    }

    @Test func pauseSnapsToTheOriginatorWhenAsked() async {
        let pair = await Pair(snaps: true)
        let pausedAt = await playThenPause(pair)
        #expect(!pair.playerB.isPlaying)
        #expect(abs(pair.playerB.currentPlaybackPosition - pausedAt) < 0.000_001, "B jumped back 80 ms to A's pause")
    }

    @Test func withoutSnappingNobodyJumpsBack() async {
        let pair = await Pair(snaps: false)
        let pausedAt = await playThenPause(pair)
        #expect(!pair.playerB.isPlaying)
        #expect(pair.playerB.currentPlaybackPosition > pausedAt + 0.05, "B stays where it paused, ahead of A")
    }

    @Test func seekPropagatesAndNeverStartsPlayback() async {
        let pair = await Pair()
        await pair.a.seek(to: 42)
        await pair.deliver()
        #expect(pair.playerB.currentPlaybackPosition == 42)
        #expect(!pair.playerB.isPlaying)
    }

    @Test func rateChangesPropagate() async {
        let pair = await Pair()
        await pair.a.play(rate: 2)
        await pair.deliver()
        #expect(pair.playerB.playbackSpeed == 2)
        pair.clock.advance(by: .seconds(3))
        #expect(abs(pair.playerB.currentPlaybackPosition - pair.playerA.currentPlaybackPosition) < 0.020)
    }

    @Test func commandsForAnotherItemAreIgnored() async {
        let pair = await Pair()
        await pair.b.setItem("trailer")
        await pair.a.seek(to: 30)
        await pair.deliver()
        #expect(pair.playerB.currentPlaybackPosition == 0)
    }

    @Test func aSuspendedParticipantNeitherSendsNorReceivesThenRejoinsWithinAChunk() async {
        let pair = await Pair()
        await pair.a.play()
        await pair.deliver()
        // An interstitial: the group does not wait for it.
        let token = await pair.b.beginSuspension(for: .playingInterstitial)
        // B plays something else: its player stops; A seeks meanwhile; B's own seek is not sent.
        pair.playerB.pause()
        await pair.a.seek(to: 300)
        await pair.b.seek(to: 5)
        await pair.deliver()
        #expect(pair.playerB.currentPlaybackPosition == 5, "B did not apply A's seek while suspended")
        #expect(pair.playerA.currentPlaybackPosition >= 300, "A did not get B's seek")
        pair.clock.advance(by: .seconds(2))
        await pair.b.endSuspension(token)
        let expected = await pair.b.expectedItemTime(atHostTime: pair.clock.now().seconds) ?? 0
        #expect(pair.playerB.isPlaying)
        #expect(abs(pair.playerB.currentPlaybackPosition - expected) < 0.020, "within one 20 ms chunk")
        #expect(abs(pair.playerB.currentPlaybackPosition - pair.playerA.currentPlaybackPosition) < 0.020)
    }

    @Test func endingASuspensionWithANewTimeMovesTheGroup() async {
        let pair = await Pair()
        await pair.a.play()
        await pair.deliver()
        let token = await pair.b.beginSuspension(for: .userIsChangingCurrentTime)
        await pair.b.endSuspension(token, proposingNewTime: 120)
        await pair.deliver()
        #expect(abs(pair.playerA.currentPlaybackPosition - 120) < 0.2)
        #expect(pair.playerA.isPlaying, "a seek keeps the play state")
    }

    @Test func hostClockOffsetsTranslatePlayTimes() async {
        let pair = await Pair()
        // B is told A's clock reads 5 s behind its own, so A's host times move 5 s later:
        // B believes A started 5 s after it really did, and joins 5 s behind.
        await pair.b.setHostClockOffset(-5, of: ParticipantID("a"))
        pair.playerA.seek(to: 100)
        await pair.a.play()
        await pair.deliver()
        #expect(abs(pair.playerA.currentPlaybackPosition - pair.playerB.currentPlaybackPosition - 5) < 0.020)
    }
}

@Suite(.timeLimit(.minutes(1))) struct CatchUpAndDriftTests {
    @Test func whatHappenedRewindsPlaysFastAndRejoins() async {
        let pair = await Pair()
        pair.playerA.seek(to: 60)
        await pair.a.play()
        await pair.deliver()
        let catchUp = Task { await pair.b.catchUp(rewind: 10, rate: 2) }
        #expect(await eventually { pair.playerB.playbackSpeed == 2 })
        #expect(abs(pair.playerB.currentPlaybackPosition - (pair.playerA.currentPlaybackPosition - 10)) < 0.020)
        #expect(await pair.b.suspensionReasons == [SuspensionReason("catchUp")])
        // 10 s behind at 2×: level with the group after 10 s.
        await advance(pair.clock, by: .milliseconds(500), upTo: .seconds(11)) { await pair.b.suspensionReasons.isEmpty }
        await catchUp.value
        #expect(pair.playerB.playbackSpeed == 1)
        #expect(abs(pair.playerB.currentPlaybackPosition - pair.playerA.currentPlaybackPosition) < 0.020)
    }

    @Test func driftIsTrimmedSmallAndSeekedLarge() {
        let corrector = DriftCorrector()
        #expect(corrector.correction(position: 10.001, expected: 10, groupRate: 1) == .none(rate: 1))
        guard case .trim(let slower) = corrector.correction(position: 10.010, expected: 10, groupRate: 1) else {
            Issue.record("expected a trim"); return
        }
        // 10 ms / 10 s would be 1000 ppm: capped at 500 ppm.
        #expect(slower == 1 - 500e-6)
        guard case .trim(let faster) = corrector.correction(position: 9.997, expected: 10, groupRate: 1) else {
            Issue.record("expected a trim"); return
        }
        #expect(abs(faster - (1 + 0.0003)) < 1e-9)
        #expect(corrector.correction(position: 10.5, expected: 10, groupRate: 1) == .seek(to: 10))
        #expect(corrector.correction(position: 10.05, expected: 10, groupRate: 1, canTrimRate: false) == .seek(to: 10))
        #expect(corrector.correction(position: 10.01, expected: 10, groupRate: 0) == .seek(to: 10))
    }
}

@Suite(.timeLimit(.minutes(1))) struct WaitingTests {
    @Test func theGroupWaitsForAStallAndResumesTogether() async {
        let pair = await Pair()
        await pair.a.play()
        await pair.deliver()
        pair.clock.advance(by: .seconds(3))
        let token = await pair.b.beginSuspension(for: .stallRecovery)
        pair.playerB.pause()
        await pair.deliver()
        #expect(await pair.a.isWaiting)
        #expect(!pair.playerA.isPlaying, "A waits for B")
        let waitedAt = pair.playerA.currentPlaybackPosition
        pair.clock.advance(by: .seconds(4))
        #expect(pair.playerA.currentPlaybackPosition == waitedAt)
        await pair.b.endSuspension(token)
        await pair.deliver()
        #expect(pair.playerA.isPlaying && pair.playerB.isPlaying)
        #expect(await !pair.a.isWaiting)
        #expect(abs(pair.playerA.currentPlaybackPosition - pair.playerB.currentPlaybackPosition) < 0.020)
        #expect(abs(pair.playerB.currentPlaybackPosition - waitedAt) < 0.2, "nobody skipped what the group waited through")
    }

    @Test func reasonsThatDoNotTriggerWaitingLeaveTheGroupPlaying() async {
        let pair = await Pair()
        await pair.a.play()
        await pair.deliver()
        _ = await pair.b.beginSuspension(for: .playingInterstitial)
        await pair.deliver()
        #expect(await !pair.a.isWaiting)
        #expect(pair.playerA.isPlaying)
    }

    @Test func theParticipantLimitStopsTheGroupWaitingForTooMany() async {
        let clock = ManualHostClock(now: .seconds(1000))
        let medium = LoopbackCoordinationMedium(clock: clock)
        var players: [PlaybackControl] = []
        var coordinators: [PlaybackCoordinator] = []
        for name in ["a", "b", "c"] {
            let player = PlaybackControl(clock: clock)
            player.update { $0.state = .paused; $0.timeRange = 0...3600 }
            let coordinator = PlaybackCoordinator(participant: ParticipantID(name), itemID: "movie", playback: player, medium: medium, clock: clock)
            await coordinator.setParticipantLimit(1, forWaitingOn: .stallRecovery)
            await coordinator.start()
            players.append(player)
            coordinators.append(coordinator)
        }
        let first = coordinators[0]
        await first.play()
        _ = await coordinators[1].beginSuspension(for: .stallRecovery)
        #expect(await eventually { await first.isWaiting }, "one staller: the group waits")
        await first.play()
        _ = await coordinators[2].beginSuspension(for: .stallRecovery)
        try? await Task.sleep(for: .milliseconds(20))
        #expect(await !first.isWaiting, "two stallers exceed the limit of one: play on")
        #expect(players[0].isPlaying)
    }
}

extension WaitingTests {
    @Test func bufferingMakesTheGroupWait() async {
        let pair = await Pair()
        await pair.a.play()
        await pair.deliver()
        await pair.b.setBuffering(true)
        await pair.deliver()
        #expect(await pair.a.isWaiting)
        await pair.b.setBuffering(false)
        await pair.deliver()
        #expect(pair.playerA.isPlaying && pair.playerB.isPlaying)
    }
}
