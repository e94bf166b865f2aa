import Coordination
import MediaClock
import MediaDevice
import RoutingModel
import MediaRouteTestSupport
import Testing

@Suite(.timeLimit(.minutes(1))) struct ClockSyncOverMediumTests {
    @Test func participantsWithDisagreeingClocksStillPlayInStep() async {
        let base = ManualHostClock(now: .seconds(1000))
        // A's clock is the base; B's runs 100 ppm fast and reads 250 ms ahead.
        let clockA = SkewedHostClock(base: base, offset: .zero, skew: 0)
        let clockB = SkewedHostClock(base: base, offset: .milliseconds(250), skew: 100e-6)
        let medium = LoopbackCoordinationMedium(clock: base, seed: 3)
        let a = ParticipantID("a"), b = ParticipantID("b")
        // 0.3 ms one way with 0.2 ms jitter; A's path is slower (×1.5), B's faster (×0.5); 20 % of samples lost.
        await medium.setConditions(.init(delay: .microseconds(300), jitterMean: .microseconds(200), outboundFactor: 1.5, clockSampleLoss: 0.2), for: a)
        await medium.setConditions(.init(delay: .microseconds(300), jitterMean: .microseconds(200), outboundFactor: 0.5, clockSampleLoss: 0.2), for: b)
        let playerA = PlaybackControl(clock: clockA)
        let playerB = PlaybackControl(clock: clockB)
        for player in [playerA, playerB] { player.update { $0.state = .paused; $0.timeRange = 0...7200 } }
        let coordinatorA = PlaybackCoordinator(participant: a, itemID: "movie", playback: playerA, medium: medium, clock: clockA)
        let coordinatorB = PlaybackCoordinator(participant: b, itemID: "movie", playback: playerB, medium: medium, clock: clockB)
        await coordinatorA.start()
        await coordinatorB.start()
        await coordinatorA.startClockSync(every: .seconds(1))
        await coordinatorB.startClockSync(every: .seconds(1))
        await run(base, until: .seconds(1120))

        let estimate = await coordinatorB.clockEstimates()[a]
        #expect(estimate != nil)
        if let estimate {
            let trueOffset = clockA.now().seconds - clockB.now().seconds
            #expect(abs(estimate.offset - trueOffset) < 0.0005, "offset error \(estimate.offset - trueOffset)")
            #expect(abs(estimate.drift + 100e-6) < 5e-6, "drift \(estimate.drift)")
            #expect(estimate.errorBound < 0.002)
        }

        playerA.seek(to: 60)
        await coordinatorA.play()
        await run(base, until: base.now() + .milliseconds(10))
        #expect(playerB.isPlaying)
        #expect(abs(playerA.currentPlaybackPosition - playerB.currentPlaybackPosition) < 0.001,
                "in step despite 250 ms and 100 ppm of clock disagreement")
        await coordinatorA.stop()
        await coordinatorB.stop()
    }
}
