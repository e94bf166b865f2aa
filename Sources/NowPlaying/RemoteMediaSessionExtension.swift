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

/// How an extension is registered: the extension and the push topic its sessions are started under.
public struct RemoteMediaSessionExtensionConfiguration<Extension: RemoteMediaSessionExtension>: Sendable {
    public let `extension`: Extension
    /// The push topic (`apns-topic` on the seeds' platform); defaults to the attributes' type name.
    public let topic: String
    /// Whether push events may start and update its sessions (false for sessions only the box itself creates).
    public let acceptsPushes: Bool

    public init(extension: Extension, topic: String? = nil, acceptsPushes: Bool = true) {
        self.extension = `extension`
        self.topic = topic ?? String(describing: Extension.Attributes.self)
        self.acceptsPushes = acceptsPushes
    }
}

extension RemoteMediaSessionExtension {
    public var configuration: RemoteMediaSessionExtensionConfiguration<Self> {
        RemoteMediaSessionExtensionConfiguration(extension: self)
    }
}

/// The live side of one remote session: what is playing, where playback is,
/// which commands work, and the devices it plays on.
///
/// Conform with an actor or a class that guards its state; the center reads
/// the properties again after every ``update(_:)``, every command, and every
/// element of ``changes()`` (for changes that come from the device itself).
public protocol RemoteMediaSessionRepresentable: AnyObject, Sendable {
    associatedtype Attributes: RemoteMediaSessionAttributes

    var id: String { get }
    /// New attributes for this session (same id).
    func update(_ attributes: Attributes) async
    var content: (any MediaContentRepresentable)? { get async }
    var playbackSnapshot: MediaPlaybackSnapshot? { get async }
    var commands: [MediaCommand] { get async }
    var devices: [RemoteMediaDevice] { get async }
    /// The content's language options and the current selection.
    var languageOptions: MediaLanguageOptions { get async }
    /// Yields whenever the representation changed without an ``update(_:)``.
    func changes() -> AsyncStream<Void>
}

extension RemoteMediaSessionRepresentable {
    public var languageOptions: MediaLanguageOptions { MediaLanguageOptions() }
    public func changes() -> AsyncStream<Void> { AsyncStream { $0.finish() } }
}
