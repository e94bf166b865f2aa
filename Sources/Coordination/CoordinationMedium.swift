#if canImport(Glibc)
import Glibc
#endif
public import MediaClock

/// Who takes part in a group session.
public struct ParticipantID: Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
}

/// A group playback command as it travels between participants.
public struct CoordinationMessage: Sendable, Hashable, Codable {
    public enum Command: Sendable, Hashable, Codable {
        /// Playing at `rate`; the item was at `itemTime` at the originator's `hostTime`.
        case play(rate: Double, itemTime: Double, hostTime: Double)
        /// Paused at `itemTime` at the originator's `hostTime`.
        case pause(itemTime: Double, hostTime: Double)
        /// Moved to `itemTime` at the originator's `hostTime`; the play state does not change.
        case seek(itemTime: Double, hostTime: Double)
        /// A participant joined a group session (and tells its activity, JSON).
        case joined(activity: [UInt8])
        /// The group's activity changed (JSON); everyone enqueues the new item.
        case activity([UInt8])
        /// A participant left the group session.
        case left
        /// The group session ended for everyone.
        case ended
        /// A participant is still there (sent periodically while joined).
        case heartbeat
        /// A participant is suspended for a reason the group may wait for.
        case beginWaiting(reason: String)
        /// That participant is back.
        case endWaiting
        /// A participant's view of the group timeline, sent when a partition heals;
        /// receivers adopt it when it is newer than theirs.
        case announce(rate: Double, itemTime: Double, hostTime: Double)
        /// A clock sample request, stamped on the requester's host clock.
        case clockRequest(t1: Double)
        /// The reply to `to`'s request, stamped on the replier's host clock.
        case clockReply(to: ParticipantID, t1: Double, t2: Double, t3: Double)
    }

    public var originator: ParticipantID
    /// The item the command is about; participants on another item ignore it.
    public var itemID: String
    /// Per-originator sequence number; older commands than the newest seen are ignored.
    public var sequence: UInt64
    public var command: Command

    public init(originator: ParticipantID, itemID: String, sequence: UInt64, command: Command) {
        self.originator = originator
        self.itemID = itemID
        self.sequence = sequence
        self.command = command
    }
}

/// Carries coordination messages between participants: a LAN between boxes, or
/// ``LoopbackCoordinationMedium`` in-process.
public protocol CoordinationMedium: Sendable {
    /// Joins; messages from the other participants arrive on the stream.
    func join(_ participant: ParticipantID) async -> AsyncStream<CoordinationMessage>
    /// Sends to every other participant.
    func broadcast(_ message: CoordinationMessage) async
    /// Leaves; the stream ends.
    func leave(_ participant: ParticipantID) async
}

/// An in-process medium with network conditions per participant, driven by a
/// host clock (a manual one in tests, so delays cost no real time): one-way delay
/// and exponential jitter of messages to a participant, a factor on messages from
/// it (asymmetry), and loss of clock samples (commands stay reliable, as on the
/// LAN medium). Random numbers are seeded: runs repeat exactly.
public actor LoopbackCoordinationMedium: CoordinationMedium {
    /// How messages reach and leave one participant.
    public struct Conditions: Sendable, Hashable {
        public var delay: Duration
        public var jitterMean: Duration
        /// Multiplies the delay of messages this participant sends.
        public var outboundFactor: Double
        /// Fraction of clock-sample messages to this participant that are lost.
        public var clockSampleLoss: Double

        public init(delay: Duration = .zero, jitterMean: Duration = .zero, outboundFactor: Double = 1, clockSampleLoss: Double = 0) {
            self.delay = delay
            self.jitterMean = jitterMean
            self.outboundFactor = outboundFactor
            self.clockSampleLoss = clockSampleLoss
        }
    }

    private let clock: any HostClock
    private var members: [ParticipantID: AsyncStream<CoordinationMessage>.Continuation] = [:]
    private var conditions: [ParticipantID: Conditions] = [:]
    private let defaultConditions: Conditions
    private var random: SplitMix64
    /// Participants that cannot reach each other (a network partition), by group.
    private var partitionGroups: [Set<ParticipantID>] = []

    public init(clock: any HostClock, delay: Duration = .zero, seed: UInt64 = 1) {
        self.clock = clock
        self.defaultConditions = Conditions(delay: delay)
        self.random = SplitMix64(seed: seed)
    }

    /// Sets the one-way delay of messages to `participant`.
    public func setDelay(_ delay: Duration, to participant: ParticipantID) {
        var current = conditions[participant] ?? defaultConditions
        current.delay = delay
        conditions[participant] = current
    }

    /// Sets every condition of `participant`.
    public func setConditions(_ conditions: Conditions, for participant: ParticipantID) {
        self.conditions[participant] = conditions
    }

    /// Splits the participants into groups that cannot reach each other.
    public func partition(_ groups: [Set<ParticipantID>]) {
        partitionGroups = groups
    }

    /// Ends a partition.
    public func heal() {
        partitionGroups = []
    }

    private func reachable(_ from: ParticipantID, _ to: ParticipantID) -> Bool {
        guard !partitionGroups.isEmpty else { return true }
        return partitionGroups.contains { $0.contains(from) && $0.contains(to) }
    }

    public func join(_ participant: ParticipantID) -> AsyncStream<CoordinationMessage> {
        let (stream, continuation) = AsyncStream.makeStream(of: CoordinationMessage.self)
        members[participant]?.finish()
        members[participant] = continuation
        return stream
    }

    public func broadcast(_ message: CoordinationMessage) {
        let sentAt = clock.now()
        let sender = conditions[message.originator] ?? defaultConditions
        let isClockSample: Bool
        switch message.command {
        case .clockRequest, .clockReply: isClockSample = true
        default: isClockSample = false
        }
        for (participant, continuation) in members where participant != message.originator {
            guard reachable(message.originator, participant) else { continue }
            let receiver = conditions[participant] ?? defaultConditions
            if isClockSample, receiver.clockSampleLoss > 0, random.nextDouble() < receiver.clockSampleLoss { continue }
            var seconds = receiver.delay.seconds
            if receiver.jitterMean > .zero {
                seconds += -receiver.jitterMean.seconds * log(1 - random.nextDouble())
            }
            let delay = Duration.seconds(double: seconds * sender.outboundFactor)
            if delay == .zero {
                continuation.yield(message)
            } else {
                Task { [clock] in
                    try? await clock.sleep(until: sentAt + delay)
                    continuation.yield(message)
                }
            }
        }
    }

    public func leave(_ participant: ParticipantID) {
        members.removeValue(forKey: participant)?.finish()
    }
}

/// A participant's own host clock: a base clock with an offset and a rate error,
/// for simulating boxes whose clocks disagree.
public struct SkewedHostClock: HostClock {
    public let base: any HostClock
    public let offset: Duration
    /// 100e-6: this clock runs 100 ppm fast.
    public let skew: Double

    public init(base: any HostClock, offset: Duration, skew: Double) {
        self.base = base
        self.offset = offset
        self.skew = skew
    }

    public func now() -> Duration {
        .seconds(double: base.now().seconds * (1 + skew)) + offset
    }

    public func sleep(until deadline: Duration) async throws {
        // Invert now(): the base time at which this clock reads `deadline`.
        try await base.sleep(until: .seconds(double: (deadline - offset).seconds / (1 + skew)))
    }
}
