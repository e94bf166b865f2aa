#if canImport(Glibc)
import Glibc
#endif
import MediaClock

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
