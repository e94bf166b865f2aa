#if canImport(Glibc)
import Glibc
#endif
import MediaClock

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
