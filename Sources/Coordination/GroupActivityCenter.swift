#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
public import MediaClock

/// Where a box's group sessions come from: its own activations, and invitations
/// heard on the medium (another box that joined a session of the same activity type).
public actor GroupActivityCenter<Activity: GroupActivity> {
    private let participant: ParticipantID
    private let medium: any CoordinationMedium
    private let clock: any HostClock
    private let vanishAfter: Duration
    private let preference: @Sendable (Activity) async -> GroupActivityActivationResult
    private var groupAvailable: Bool
    private var observers: [AsyncStream<GroupSession<Activity>>.Continuation] = []
    private var listener: Task<Void, Never>?

    /// - Parameter preference: asks the person whether to share (the seeds' system prompt).
    public init(
        participant: ParticipantID, medium: any CoordinationMedium, clock: any HostClock,
        groupAvailable: Bool = true, vanishAfter: Duration = .seconds(10),
        preference: @escaping @Sendable (Activity) async -> GroupActivityActivationResult = { _ in .activationPreferred }
    ) {
        self.participant = participant
        self.medium = medium
        self.clock = clock
        self.groupAvailable = groupAvailable
        self.vanishAfter = vanishAfter
        self.preference = preference
    }

    /// Whether this box is in a group (peers configured or discovered).
    public func setGroupAvailable(_ available: Bool) { groupAvailable = available }

    /// Whether to share `activity` with the group or play alone.
    public func prepareForActivation(_ activity: Activity) async -> GroupActivityActivationResult {
        guard groupAvailable else { return .activationDisabled }
        return await preference(activity)
    }

    /// Starts a group session for `activity`; it arrives on ``sessions()``.
    public func activate(_ activity: Activity) -> GroupSession<Activity> {
        let session = GroupSession(
            activity: activity, localParticipant: participant, medium: medium, clock: clock, vanishAfter: vanishAfter)
        for observer in observers { observer.yield(session) }
        return session
    }

    /// Sessions as they start here or are offered by another box.
    public func sessions() -> AsyncStream<GroupSession<Activity>> {
        let (stream, continuation) = AsyncStream.makeStream(of: GroupSession<Activity>.self)
        observers.append(continuation)
        return stream
    }

    /// Listens for invitations until a session of ours joins the medium (which then takes it over).
    public func listen() async {
        let messages = await medium.join(participant)
        listener?.cancel()
        listener = Task { [weak self] in
            for await message in messages {
                guard case .joined(let payload) = message.command,
                    let envelope = try? JSONDecoder().decode(ActivityEnvelope<Activity>.self, from: Data(payload))
                else { continue }
                await self?.offer(envelope)
                return
            }
        }
    }

    private func offer(_ envelope: ActivityEnvelope<Activity>) {
        let session = GroupSession(
            activity: envelope.activity, version: envelope.version, localParticipant: participant, medium: medium,
            clock: clock, vanishAfter: vanishAfter)
        for observer in observers { observer.yield(session) }
    }
}

extension GroupActivity {
    /// The seeds' `activity.prepareForActivation()`, asked of this box's center.
    public func prepareForActivation(in center: GroupActivityCenter<Self>) async -> GroupActivityActivationResult {
        await center.prepareForActivation(self)
    }

    /// The seeds' `activity.activate()`: starts a group session through `center`.
    @discardableResult
    public func activate(in center: GroupActivityCenter<Self>) async -> GroupSession<Self> {
        await center.activate(self)
    }
}
