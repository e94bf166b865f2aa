public import MediaClock
import MediaDevice
public import RoutingModel

/// Several routes' playback of one item kept on one timeline in one process (the daemon's
/// group routes, `mediaroutectl group`): a ``PlaybackCoordinator`` per member on a loopback
/// medium, and, every ``correctionInterval``, each member's position compared with where
/// the group expects it and corrected (``DriftCorrector``: a rate trim for small errors, a
/// seek for large ones). Members come and go while it plays: one that joins is moved into
/// place at once, one that leaves leaves the others playing.
public actor CoordinatedGroup {
    /// How often members are compared with the group's timeline.
    public static let correctionInterval = Duration.milliseconds(500)

    /// One member's place against the group's timeline.
    public struct MemberOffset: Sendable, Hashable {
        public let id: String
        /// The member's position less the group's expected position, in seconds.
        public let offset: Double
    }

    private struct Member {
        let control: any InterfaceControllable
        let coordinator: PlaybackCoordinator
        /// Until then the member is moved into place by seeks from 20 ms on (it just joined).
        var settlingUntil: Duration
    }

    public nonisolated let itemID: String
    private let clock: any HostClock
    private let medium: LoopbackCoordinationMedium
    private var members: [String: Member] = [:]
    private var order: [String] = []
    private var corrections: Task<Void, Never>?
    private var lastOffsets: [MemberOffset] = []
    private let corrector = DriftCorrector()
    private let joining: DriftCorrector = {
        var corrector = DriftCorrector()
        // A member whose play command arrived late (a busy box, a slow device) is moved into
        // place at once: a trim of at most 500 ppm would take minutes for tens of milliseconds.
        corrector.hardResync = 0.020
        return corrector
    }()

    public init(itemID: String, clock: any HostClock = SystemHostClock()) {
        self.itemID = itemID
        self.clock = clock
        medium = LoopbackCoordinationMedium(clock: clock)
    }

    /// The members' ids, in the order they joined.
    public var memberIDs: [String] { order }

    /// Adds a member (paused by the caller or not): while the group plays it is moved to the
    /// group's position at once. Adding an id again replaces its playback.
    public func add(_ id: String, control: any InterfaceControllable) async {
        await remove(id)
        let coordinator = PlaybackCoordinator(participant: ParticipantID(id), itemID: itemID, playback: control, medium: medium, clock: clock)
        await coordinator.start()
        let first = order.first.flatMap { members[$0] }
        members[id] = Member(control: control, coordinator: coordinator, settlingUntil: clock.now() + .seconds(1))
        order.append(id)
        // A group already under way tells the newcomer its timeline, which moves it into place
        // (and lets it carry the group on if the others leave).
        if let first, await first.coordinator.expectedItemTime(atHostTime: clock.now().seconds) != nil {
            await first.coordinator.announceTimeline()
        }
    }

    /// Lets a member go (its playback is left as it is); the others play on.
    public func remove(_ id: String) async {
        guard let member = members.removeValue(forKey: id) else { return }
        order.removeAll { $0 == id }
        await member.coordinator.stop()
        member.control.playbackSpeed = 1
    }

    /// Plays every member from the group's position.
    public func play() async {
        guard let first = order.first.flatMap({ members[$0] }) else { return }
        for id in order { members[id]?.settlingUntil = clock.now() + .seconds(1) }
        await first.coordinator.play()
        startCorrecting()
    }

    public func pause() async {
        guard let first = order.first.flatMap({ members[$0] }) else { return }
        await first.coordinator.pause()
    }

    /// Moves every member to `position` (seconds into the item).
    public func seek(to position: Double) async {
        guard let first = order.first.flatMap({ members[$0] }) else { return }
        for id in order { members[id]?.settlingUntil = clock.now() + .seconds(1) }
        await first.coordinator.seek(to: position)
    }

    /// Where the group expects its members now (seconds into the item); nil before it plays.
    public func expectedPosition() async -> Double? {
        guard let first = order.first.flatMap({ members[$0] }) else { return nil }
        return await first.coordinator.expectedItemTime(atHostTime: clock.now().seconds)
    }

    /// Each member's offset from the group's timeline as the last correction found it.
    public var offsets: [MemberOffset] { lastOffsets }

    /// Compares every member with the group's timeline and corrects it; returns the offsets found.
    @discardableResult
    public func correct() async -> [MemberOffset] {
        guard let expected = await expectedPosition() else { return [] }
        let now = clock.now()
        var found: [MemberOffset] = []
        for id in order {
            guard let member = members[id] else { continue }
            let control = member.control
            let position = control.currentPlaybackPosition
            found.append(MemberOffset(id: id, offset: position - expected))
            let policy = now <= member.settlingUntil ? joining : corrector
            switch policy.correction(position: position, expected: expected, groupRate: 1) {
            case .trim(let rate): control.playbackSpeed = rate
            case .seek(let target): control.seek(to: target)
            case .none(let rate): if control.playbackSpeed != rate { control.playbackSpeed = rate }
            }
        }
        lastOffsets = found
        return found
    }

    private func startCorrecting() {
        guard corrections == nil else { return }
        let clock = self.clock
        corrections = Task { [weak self] in
            while !Task.isCancelled {
                try? await clock.sleep(for: Self.correctionInterval)
                guard let self, !Task.isCancelled else { return }
                await self.correct()
            }
        }
    }

    /// Stops coordinating: every member leaves (their playback is left as it is).
    public func end() async {
        corrections?.cancel()
        corrections = nil
        for id in order { await remove(id) }
    }
}
