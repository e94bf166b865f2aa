public import MediaClock
import MediaDevice
public import RoutingModel

/// Keeps one participant's `PlaybackControl` in step with a group: local play,
/// pause, seek and rate changes go to the others through the medium, theirs are
/// applied here, on the shared timeline of (item time, host time, rate).
///
/// Commands carry their originator and item id: a participant on another item
/// ignores them. While suspended, a participant neither sends nor applies group
/// commands (it still records them), and ending the suspension re-aligns it.
public actor PlaybackCoordinator {
    /// The group's playback as last agreed.
    public struct Timeline: Sendable, Hashable {
        public var itemTime: Double
        public var hostTime: Double
        public var rate: Double
    }

    public let participant: ParticipantID
    private let medium: any CoordinationMedium
    private let playback: any InterfaceControllable
    private let clock: any HostClock
    /// When true, a pause lands every participant on the originator's paused time;
    /// when false, nobody jumps back: each pauses where it is.
    public var pauseSnapsToMediaTimeOfOriginator: Bool
    public private(set) var itemID: String
    public private(set) var timeline: Timeline?
    private var sequence: UInt64 = 0
    private var newestSeen: [ParticipantID: UInt64] = [:]
    private var suspensions: [UInt64: SuspensionReason] = [:]
    private var nextSuspension: UInt64 = 0
    private var listener: Task<Void, Never>?
    /// Suspensions for these reasons make the whole group wait (pause) until they end.
    public var suspensionReasonsThatTriggerWaiting: Set<SuspensionReason> = [.stallRecovery, .userActionRequired]
    /// The group waits for at most this many participants suspended for a reason;
    /// beyond that it plays on without them.
    public var participantLimitForWaiting: [SuspensionReason: Int] = [:]
    /// Who the group is (or might be) waiting for, and why.
    public private(set) var waiters: [ParticipantID: SuspensionReason] = [:]
    /// Where the group paused to wait, and its rate before.
    private var waitingFrom: (itemTime: Double, rate: Double)?
    private var estimators: [ParticipantID: DriftTrackingEstimator] = [:]
    private var bufferingToken: UInt64?
    private var clockSync: Task<Void, Never>?
    /// Offset of each peer's host clock from ours (peer − local), from clock sync.
    private var peerOffsets: [ParticipantID: Double] = [:]

    public init(
        participant: ParticipantID, itemID: String, playback: any InterfaceControllable, medium: any CoordinationMedium,
        clock: any HostClock, pauseSnapsToMediaTimeOfOriginator: Bool = true
    ) {
        self.participant = participant
        self.itemID = itemID
        self.playback = playback
        self.medium = medium
        self.clock = clock
        self.pauseSnapsToMediaTimeOfOriginator = pauseSnapsToMediaTimeOfOriginator
    }

    /// Joins the medium and starts applying the group's commands (a coordinator
    /// made by a `GroupSession` is fed by the session instead).
    public func start() async {
        let messages = await medium.join(participant)
        listener = Task { [weak self] in
            for await message in messages { await self?.receive(message) }
        }
    }

    /// Leaves the group.
    public func stop() async {
        listener?.cancel()
        clockSync?.cancel()
        await medium.leave(participant)
    }

    public func setPauseSnapsToMediaTimeOfOriginator(_ snaps: Bool) {
        pauseSnapsToMediaTimeOfOriginator = snaps
    }

    /// Switches to another item (group commands for the old one are then ignored).
    public func setItem(_ id: String) {
        itemID = id
        timeline = nil
    }

    /// Starts exchanging clock samples with every peer every `interval`; the
    /// estimates then translate the peers' host times (see ``clockEstimates()``).
    public func startClockSync(every interval: Duration = .seconds(1)) {
        clockSync?.cancel()
        clockSync = Task { [weak self, clock] in
            while !Task.isCancelled {
                await self?.requestClockSample()
                guard (try? await clock.sleep(for: interval)) != nil else { return }
            }
        }
    }

    private func requestClockSample() async {
        sequence += 1
        await medium.broadcast(CoordinationMessage(
            originator: participant, itemID: itemID, sequence: sequence, command: .clockRequest(t1: now)))
    }

    /// Each peer's clock as estimated from samples: offset, drift and error bound.
    public func clockEstimates() -> [ParticipantID: ClockEstimate] {
        let time = now
        return estimators.compactMapValues { $0.estimate(at: time) }
    }

    /// Tells the coordinator how far a peer's host clock is from ours (from a clock-sync estimator).
    public func setHostClockOffset(_ offset: Double, of peer: ParticipantID) {
        peerOffsets[peer] = offset
    }

    private var now: Double { clock.now().seconds }

    /// Where the group expects the item to be at a local host time.
    public func expectedItemTime(atHostTime hostTime: Double) -> Double? {
        guard let timeline else { return nil }
        return timeline.itemTime + (hostTime - timeline.hostTime) * timeline.rate
    }

    // MARK: Local commands

    /// Plays at `rate` (1 by default) from the current position, for the whole group.
    public func play(rate: Double = 1) async {
        guard rate > 0, rate.isFinite else { return await pause() }
        let itemTime = playback.currentPlaybackPosition
        let hostTime = now
        apply(.play(rate: rate, itemTime: itemTime, hostTime: hostTime), from: participant)
        await send(.play(rate: rate, itemTime: itemTime, hostTime: hostTime))
    }

    /// Pauses the whole group.
    public func pause() async {
        let itemTime = playback.currentPlaybackPosition
        let hostTime = now
        apply(.pause(itemTime: itemTime, hostTime: hostTime), from: participant)
        await send(.pause(itemTime: itemTime, hostTime: hostTime))
    }

    /// Seeks the whole group; nobody starts playing because of it.
    public func seek(to itemTime: Double) async {
        let hostTime = now
        apply(.seek(itemTime: itemTime, hostTime: hostTime), from: participant)
        await send(.seek(itemTime: itemTime, hostTime: hostTime))
    }

    private func send(_ command: CoordinationMessage.Command) async {
        guard suspensions.isEmpty else { return }
        sequence += 1
        await medium.broadcast(CoordinationMessage(originator: participant, itemID: itemID, sequence: sequence, command: command))
    }

    /// Reports that this participant's player is buffering (or done): buffering is a
    /// `stallRecovery` suspension, so by default the group waits for it.
    public func setBuffering(_ buffering: Bool) async {
        if buffering {
            guard bufferingToken == nil else { return }
            bufferingToken = await beginSuspension(for: .stallRecovery)
        } else if let token = bufferingToken {
            bufferingToken = nil
            await endSuspension(token)
        }
    }

    /// Sends this participant's view of the group timeline (when a partition heals);
    /// whichever side changed it last wins everywhere.
    public func announceTimeline() async {
        guard let timeline else { return }
        await broadcast(.announce(rate: timeline.rate, itemTime: timeline.itemTime, hostTime: timeline.hostTime))
    }

    // MARK: Suspensions

    /// Steps out of group playback; returns a token to end the suspension with.
    public func beginSuspension(for reason: SuspensionReason) async -> UInt64 {
        nextSuspension += 1
        suspensions[nextSuspension] = reason
        if suspensionReasonsThatTriggerWaiting.contains(reason), waiters[participant] == nil {
            waiters[participant] = reason
            evaluateWaiting()
            await broadcast(.beginWaiting(reason: reason.rawValue))
        }
        return nextSuspension
    }

    public func setSuspensionReasonsThatTriggerWaiting(_ reasons: Set<SuspensionReason>) {
        suspensionReasonsThatTriggerWaiting = reasons
    }

    public func setParticipantLimit(_ limit: Int, forWaitingOn reason: SuspensionReason) {
        participantLimitForWaiting[reason] = limit
    }

    /// Whether the group is paused waiting for a suspended participant.
    public var isWaiting: Bool { waitingFrom != nil }

    /// Pauses the group when someone it should wait for is suspended.
    private func evaluateWaiting() {
        var counts: [SuspensionReason: Int] = [:]
        for reason in waiters.values { counts[reason, default: 0] += 1 }
        let shouldWait = counts.contains { reason, count in
            suspensionReasonsThatTriggerWaiting.contains(reason) && count <= participantLimitForWaiting[reason, default: Int.max]
        }
        guard shouldWait, waitingFrom == nil, let timeline, timeline.rate > 0 else { return }
        let itemTime = timeline.itemTime + (now - timeline.hostTime) * timeline.rate
        waitingFrom = (itemTime, timeline.rate)
        self.timeline = Timeline(itemTime: itemTime, hostTime: now, rate: 0)
        if suspensions.isEmpty {
            playback.pause()
            playback.seek(to: itemTime)
        }
    }

    private func broadcast(_ command: CoordinationMessage.Command) async {
        sequence += 1
        await medium.broadcast(CoordinationMessage(originator: participant, itemID: itemID, sequence: sequence, command: command))
    }

    /// The reasons this participant is suspended for.
    public var suspensionReasons: [SuspensionReason] { Array(suspensions.values) }

    /// Ends a suspension; when it was the last one, re-aligns to the group
    /// (its rate, and the item time it expects now).
    public func endSuspension(_ token: UInt64) async {
        guard suspensions.removeValue(forKey: token) != nil, suspensions.isEmpty else { return }
        if waiters.removeValue(forKey: participant) != nil {
            await broadcast(.endWaiting)
            if let waitingFrom, waiters.isEmpty {
                // The group waited for us: start it again from where it stopped.
                self.waitingFrom = nil
                playback.seek(to: waitingFrom.itemTime)
                await play(rate: waitingFrom.rate)
                return
            }
        }
        guard let timeline else { return }
        let target = timeline.itemTime + (now - timeline.hostTime) * timeline.rate
        playback.seek(to: target)
        if timeline.rate > 0 {
            playback.play()
            playback.playbackSpeed = timeline.rate
        } else {
            playback.pause()
        }
    }

    /// Ends a suspension by moving the whole group to `itemTime`.
    public func endSuspension(_ token: UInt64, proposingNewTime itemTime: Double) async {
        guard suspensions.removeValue(forKey: token) != nil, suspensions.isEmpty else { return }
        if waiters.removeValue(forKey: participant) != nil { await broadcast(.endWaiting) }
        await seek(to: itemTime)
    }

    // MARK: Catching up

    /// The "what happened?" flow: step back `rewind` seconds, watch at `rate` until
    /// the group is reached, then rejoin it. Meanwhile this participant neither
    /// sends nor applies group commands.
    public func catchUp(rewind: Double = 10, rate: Double = 2) async {
        guard rate > 1, let expected = expectedItemTime(atHostTime: now), let timeline, timeline.rate > 0 else { return }
        let token = await beginSuspension(for: SuspensionReason("catchUp"))
        let start = max(expected - rewind, 0)
        playback.seek(to: start)
        playback.play()
        playback.playbackSpeed = rate
        // We gain (rate − group rate) seconds per second on the group.
        let gap = expected - start
        let catchUpSeconds = gap / (rate - timeline.rate)
        try? await clock.sleep(for: .seconds(double: catchUpSeconds))
        await endSuspension(token)
    }

    // MARK: Group commands

    func receive(_ message: CoordinationMessage) async {
        guard message.originator != participant else { return }
        // Clock samples concern host clocks, whatever the item.
        switch message.command {
        case .clockRequest(let t1):
            let t2 = now
            sequence += 1
            await medium.broadcast(CoordinationMessage(
                originator: participant, itemID: itemID, sequence: sequence,
                command: .clockReply(to: message.originator, t1: t1, t2: t2, t3: now)))
            return
        case .clockReply(let to, let t1, let t2, let t3):
            guard to == participant else { return }
            estimators[message.originator, default: DriftTrackingEstimator()].add(ClockSample(t1: t1, t2: t2, t3: t3, t4: now))
            if let estimate = estimators[message.originator]?.estimate(at: now) {
                peerOffsets[message.originator] = estimate.offset
            }
            return
        default:
            break
        }
        guard message.itemID == itemID else { return }
        guard message.sequence > newestSeen[message.originator, default: 0] else { return }
        newestSeen[message.originator] = message.sequence
        // Translate the originator's host time into ours.
        let offset = peerOffsets[message.originator] ?? 0
        let command: CoordinationMessage.Command = switch message.command {
        case .play(let rate, let itemTime, let hostTime): .play(rate: rate, itemTime: itemTime, hostTime: hostTime - offset)
        case .pause(let itemTime, let hostTime): .pause(itemTime: itemTime, hostTime: hostTime - offset)
        case .seek(let itemTime, let hostTime): .seek(itemTime: itemTime, hostTime: hostTime - offset)
        case .announce(let rate, let itemTime, let hostTime): .announce(rate: rate, itemTime: itemTime, hostTime: hostTime - offset)
        case .joined, .activity, .left, .ended, .heartbeat, .beginWaiting, .endWaiting, .clockRequest, .clockReply:
            message.command
        }
        apply(command, from: message.originator)
    }

    /// Records the group's new timeline and, unless suspended, applies it locally.
    private func apply(_ command: CoordinationMessage.Command, from originator: ParticipantID) {
        let suspended = !suspensions.isEmpty && originator != participant
        switch command {
        case .play(let rate, let itemTime, let hostTime):
            waitingFrom = nil
            timeline = Timeline(itemTime: itemTime, hostTime: hostTime, rate: rate)
            guard !suspended else { return }
            // Join where the group is now, not where it was when the command left.
            playback.seek(to: itemTime + (now - hostTime) * rate)
            playback.play()
            playback.playbackSpeed = rate
        case .pause(let itemTime, let hostTime):
            timeline = Timeline(itemTime: itemTime, hostTime: hostTime, rate: 0)
            guard !suspended else { return }
            playback.pause()
            if pauseSnapsToMediaTimeOfOriginator {
                playback.seek(to: itemTime)
            } else if playback.currentPlaybackPosition < itemTime {
                // Behind the originator: catch up; ahead: stay (nobody jumps back).
                playback.seek(to: itemTime)
            }
        case .seek(let itemTime, let hostTime):
            let rate = timeline?.rate ?? (playback.isPlaying ? playback.playbackSpeed : 0)
            timeline = Timeline(itemTime: itemTime, hostTime: hostTime, rate: rate)
            guard !suspended else { return }
            // While the group plays, it has moved on since the seek was made.
            playback.seek(to: itemTime + (now - hostTime) * rate)
        case .announce(let rate, let itemTime, let hostTime):
            // After a partition: the newest timeline wins.
            guard hostTime > (timeline?.hostTime ?? -.infinity) else { return }
            let announced: CoordinationMessage.Command = rate > 0
                ? .play(rate: rate, itemTime: itemTime, hostTime: hostTime)
                : .pause(itemTime: itemTime, hostTime: hostTime)
            apply(announced, from: originator)
        case .beginWaiting(let reason):
            waiters[originator] = SuspensionReason(reason)
            evaluateWaiting()
        case .endWaiting:
            waiters[originator] = nil
        case .joined, .activity, .left, .ended, .heartbeat, .clockRequest, .clockReply:
            // Membership is the GroupSession's business; clock samples are handled on receipt.
            break
        }
    }
}
