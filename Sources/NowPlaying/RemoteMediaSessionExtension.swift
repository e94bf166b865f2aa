

/// Produces the live representation of a remote session from its attributes.
///
/// The ``NowPlayingCenter`` calls ``session(_:)`` once per session id and keeps
/// the result, so updates and commands reach the same instance: connect to the
/// device or backend once and reuse that connection.
public protocol RemoteMediaSessionExtension: Sendable {
    associatedtype Attributes: RemoteMediaSessionAttributes
    associatedtype Session: RemoteMediaSessionRepresentable where Session.Attributes == Attributes

    /// Describes the extension to the center.
    var configuration: RemoteMediaSessionExtensionConfiguration<Self> { get }

    /// The session for `attributes` (called when a session starts).
    func session(_ attributes: Attributes) async throws -> Session
}

extension RemoteMediaSessionExtension {
    public var configuration: RemoteMediaSessionExtensionConfiguration<Self> {
        RemoteMediaSessionExtensionConfiguration(extension: self)
    }
}
