#if canImport(Glibc)
import Glibc
#endif
import MediaClock

/// Who takes part in a group session.
public struct ParticipantID: Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
}
