

/// ConnectionManager:1 actions.
public enum ConnectionManagerAction: RendererAction, Hashable {
    /// The formats the renderer plays (its `Sink` answer).
    case getProtocolInfo

    public static let service = "ConnectionManager"

    public var name: String { "GetProtocolInfo" }
    public var arguments: [(name: String, value: String)] { [] }
}
