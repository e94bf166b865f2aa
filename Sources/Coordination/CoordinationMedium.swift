import MediaClock

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

/// An in-process medium with a configurable one-way delay per receiver, driven by
/// a host clock (a manual one in tests, so delays cost no real time).
public actor LoopbackCoordinationMedium: CoordinationMedium {
    private let clock: any HostClock
    private var members: [ParticipantID: AsyncStream<CoordinationMessage>.Continuation] = [:]
    private var delays: [ParticipantID: Duration] = [:]
    private let defaultDelay: Duration

    public init(clock: any HostClock, delay: Duration = .zero) {
        self.clock = clock
        self.defaultDelay = delay
    }

    /// Sets the one-way delay of messages to `participant`.
    public func setDelay(_ delay: Duration, to participant: ParticipantID) {
        delays[participant] = delay
    }

    public func join(_ participant: ParticipantID) -> AsyncStream<CoordinationMessage> {
        let (stream, continuation) = AsyncStream.makeStream(of: CoordinationMessage.self)
        members[participant]?.finish()
        members[participant] = continuation
        return stream
    }

    public func broadcast(_ message: CoordinationMessage) {
        let sentAt = clock.now()
        for (participant, continuation) in members where participant != message.originator {
            let delay = delays[participant] ?? defaultDelay
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
