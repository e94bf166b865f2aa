

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
