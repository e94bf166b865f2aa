

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
