#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
public import MediaClock
import MediaDevice
public import RoutingModel

/// An activity and the version of the group state it belongs to.
struct ActivityEnvelope<Activity: GroupActivity>: Codable {
    var version: UInt64
    var activity: Activity
}

/// One participant's view of a group doing an activity together.
///
/// States: waiting (not joined yet) → joined → invalidated (left, ended, or
/// the medium closed). Membership is tracked from join/leave messages and
/// heartbeats: a participant not heard from for `vanishAfter` is dropped. After
/// a partition, the side with the newer activity version wins everywhere.
public actor GroupSession<Activity: GroupActivity> {
    public enum State: Sendable, Hashable {
        case waiting
        case joined
        case invalidated(reason: String)
    }

    public let localParticipant: ParticipantID
    public private(set) var state: State = .waiting
    public private(set) var activity: Activity
    private var version: UInt64
    private var lastSeen: [ParticipantID: Duration] = [:]
    private let medium: any CoordinationMedium
    private let clock: any HostClock
    private let vanishAfter: Duration
    private var coordinator: PlaybackCoordinator?
    private var tasks: [Task<Void, Never>] = []
    private var activityObservers: [AsyncStream<Activity>.Continuation] = []
    private var sequence: UInt64 = 0
    /// Newest membership sequence per session incarnation (see `incarnation`).
    private var membershipSeen: [String: UInt64] = [:]
    private var departed: Set<String> = []
    /// Identifies this session instance in membership messages (carried in `itemID`).
    private let incarnation = String(UInt64.random(in: 1...UInt64.max), radix: 36)

    /// The participants, this one included once joined.
    public var participants: Set<ParticipantID> {
        var all = Set(lastSeen.keys)
        if state == .joined { all.insert(localParticipant) }
        return all
    }

    public init(
        activity: Activity, version: UInt64 = 1, localParticipant: ParticipantID, medium: any CoordinationMedium,
        clock: any HostClock, vanishAfter: Duration = .seconds(10)
    ) {
        self.activity = activity
        self.version = version
        self.localParticipant = localParticipant
        self.medium = medium
        self.clock = clock
        self.vanishAfter = vanishAfter
    }

    /// Joins: announces this participant and its activity, starts heartbeats and
    /// drops participants that vanish.
    public func join() async {
        guard state == .waiting else { return }
        let messages = await medium.join(localParticipant)
        state = .joined
        tasks.append(Task { [weak self] in
            for await message in messages { await self?.receive(message) }
            await self?.invalidate("the medium closed")
        })
        let interval = vanishAfter / 3
        tasks.append(Task { [weak self, clock] in
            while !Task.isCancelled {
                guard (try? await clock.sleep(for: interval)) != nil else { return }
                await self?.tick()
            }
        })
        await send(.joined(activity: encoded()))
    }

    /// Leaves; the others see this participant go.
    public func leave() async {
        guard state == .joined else { return }
        await send(.left)
        // Invalidated before the medium closes our stream: the task reading it would
        // otherwise get in first, while we wait on the medium, with "the medium closed".
        invalidate("left")
        await medium.leave(localParticipant)
    }

    /// Ends the session for everyone.
    public func end() async {
        guard state == .joined else { return }
        await send(.ended)
        invalidate("ended")  // before the stream closes, as in leave()
        await medium.leave(localParticipant)
    }

    /// Changes the activity for everyone (each participant enqueues the new item).
    public func setActivity(_ activity: Activity) async {
        self.activity = activity
        version += 1
        await coordinator?.setItem(activity.itemID)
        notifyActivity()
        await send(.activity(encoded()))
    }

    /// The activity each time it changes, starting with the current one.
    public func activityUpdates() -> AsyncStream<Activity> {
        let (stream, continuation) = AsyncStream.makeStream(of: Activity.self)
        continuation.yield(activity)
        activityObservers.append(continuation)
        return stream
    }

    /// A playback coordinator for this session's item, fed by the session.
    public func makePlaybackCoordinator(
        for playback: any InterfaceControllable, pauseSnapsToMediaTimeOfOriginator: Bool = true
    ) -> PlaybackCoordinator {
        let made = PlaybackCoordinator(
            participant: localParticipant, itemID: activity.itemID, playback: playback, medium: medium, clock: clock,
            pauseSnapsToMediaTimeOfOriginator: pauseSnapsToMediaTimeOfOriginator)
        coordinator = made
        return made
    }

    // MARK: Messages

    private func encoded() -> [UInt8] {
        (try? Array(JSONEncoder().encode(ActivityEnvelope(version: version, activity: activity)))) ?? []
    }

    private func send(_ command: CoordinationMessage.Command) async {
        sequence += 1
        await medium.broadcast(CoordinationMessage(originator: localParticipant, itemID: incarnation, sequence: sequence, command: command))
    }

    private func receive(_ message: CoordinationMessage) async {
        guard state == .joined, message.originator != localParticipant else { return }
        let sender = message.originator
        switch message.command {
        case .joined, .activity, .heartbeat, .left, .ended:
            // Membership messages come from the sender's session in order of their
            // sequence; an older one can arrive late (sent while it was leaving).
            // Each session instance has its own incarnation, so a box that rejoins starts afresh.
            let incarnation = message.itemID
            guard !departed.contains(incarnation), message.sequence > membershipSeen[incarnation, default: 0] else { return }
            membershipSeen[incarnation] = message.sequence
            if case .left = message.command { departed.insert(incarnation) }
        case .play, .pause, .seek, .beginWaiting, .endWaiting, .clockRequest, .clockReply, .announce:
            break
        }
        switch message.command {
        case .joined(let payload):
            let returning = isReturning(sender)
            lastSeen[sender] = clock.now()
            await adoptIfNewer(payload, from: sender)
            // Answer a newcomer so it learns about us and our state; answer one back
            // from a partition too: after a heal, its re-introduction can reach us
            // before any of its heartbeats, and then only this answer carries our
            // (possibly newer) state to it.
            if returning { await reintroduce() }
        case .activity(let payload):
            lastSeen[sender] = clock.now()
            await adoptIfNewer(payload, from: sender)
        case .heartbeat:
            let returning = isReturning(sender)
            lastSeen[sender] = clock.now()
            // Someone we had dropped is back (a healed partition): exchange state.
            if returning { await reintroduce() }
        case .left:
            lastSeen[sender] = nil
        case .ended:
            invalidate("ended by \(sender)")
        case .play, .pause, .seek, .beginWaiting, .endWaiting, .clockRequest, .clockReply, .announce:
            lastSeen[sender] = clock.now()
            await coordinator?.receive(message)
        }
    }

    /// Whether `sender` is new, was dropped, or was silent for more than half the
    /// vanishing time (cut off by a partition). An answer to a re-introduction is
    /// not itself answered: the re-introduction refreshed `lastSeen`.
    private func isReturning(_ sender: ParticipantID) -> Bool {
        lastSeen[sender].map { clock.now() - $0 > vanishAfter / 2 } ?? true
    }

    /// Tells the group our activity and playback timeline; the newest of each wins.
    private func reintroduce() async {
        await send(.joined(activity: encoded()))
        await coordinator?.announceTimeline()
    }

    private func adoptIfNewer(_ payload: [UInt8], from sender: ParticipantID) async {
        guard let envelope = try? JSONDecoder().decode(ActivityEnvelope<Activity>.self, from: Data(payload)) else { return }
        // Newer version wins; a tie is broken by the participant id, the same way everywhere.
        let newer = envelope.version > version || (envelope.version == version && sender.rawValue > localParticipant.rawValue)
        guard newer, envelope.activity != activity || envelope.version != version else { return }
        version = envelope.version
        if envelope.activity != activity {
            activity = envelope.activity
            await coordinator?.setItem(activity.itemID)
            notifyActivity()
        }
    }

    private func tick() async {
        guard state == .joined else { return }
        await send(.heartbeat)
        let now = clock.now()
        for (participant, seen) in lastSeen where now - seen > vanishAfter {
            lastSeen[participant] = nil
        }
    }

    private func notifyActivity() {
        for observer in activityObservers { observer.yield(activity) }
    }

    private func invalidate(_ reason: String) {
        if case .invalidated = state { return }
        state = .invalidated(reason: reason)
        for task in tasks { task.cancel() }
        tasks.removeAll()
        for observer in activityObservers { observer.finish() }
        activityObservers.removeAll()
    }
}
