#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// One activation of a device: created by the system when a person picks a
/// device, passed to every extension call about that activation, and ended by
/// deactivation.
public struct MediaOutputSession: Sendable, Hashable, Identifiable, CustomStringConvertible {
    public let id: UUID
    /// The device the session routes to.
    public let deviceID: String

    public init(id: UUID = UUID(), deviceID: String) {
        self.id = id
        self.deviceID = deviceID
    }

    public var description: String { "session \(id.uuidString.prefix(8)) on \(deviceID)" }
}
