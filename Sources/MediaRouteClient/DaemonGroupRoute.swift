public import DBus
public import RoutingModel
public import MediaRouteBusAPI

/// A group route in mediarouted (`org.mediaroute.Group1`): several routes playing one URL,
/// which the daemon keeps on one timeline while members leave and join.
public struct DaemonGroupRoute: Sendable {
    /// The group's object path.
    public let path: DBusObjectPath
    let backend: DaemonRoutingBackend

    /// Plays every member from the group's position (from the start the first time).
    public func play() async throws { try await backend.groupCall(path, .play) }
    public func pause() async throws { try await backend.groupCall(path, .pause) }
    /// Moves every member to `position` seconds into the item.
    public func seek(to position: Double) async throws { try await backend.groupCall(path, .seek(position: position)) }
    /// A route playing the group's URL joins, moved into place.
    public func add(_ session: MediaOutputSession) async throws { try await backend.groupCall(path, .addMember(DaemonNames.sessionPath(session))) }
    /// A member leaves; the others play on.
    public func remove(_ session: MediaOutputSession) async throws { try await backend.groupCall(path, .removeMember(DaemonNames.sessionPath(session))) }
    /// Coordination ends; the routes stay as they are.
    public func end() async throws { try await backend.groupCall(path, .end) }

    /// The members, the group's position and each member's offset from it, read now.
    public func properties() async throws -> Group1.Properties { try await backend.groupProperties(path) }

    /// The offset of `session` from the group's timeline as the daemon last found it (seconds).
    public static func offset(of session: MediaOutputSession, in properties: Group1.Properties) -> Double? {
        properties.offsets[DaemonNames.sessionPath(session)]
    }
}
