#if canImport(Glibc)
import Glibc
#endif
public import MediaClock

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
