

/// A property an exported interface has, served through `org.freedesktop.DBus.Properties`.
public struct DBusProperty: Sendable {
    public enum Access: String, Sendable {
        case read
        case write
        case readwrite
    }

    public var name: String
    public var signature: String
    public var access: Access
    public var get: @Sendable () async -> DBusValue
    /// Applies a new value (already checked against ``signature``); throw a ``DBusError`` to refuse it.
    public var set: (@Sendable (DBusValue) async throws -> Void)?

    public init(
        _ name: String, signature: String, get: @escaping @Sendable () async -> DBusValue,
        set: (@Sendable (DBusValue) async throws -> Void)? = nil
    ) {
        self.name = name
        self.signature = signature
        self.access = set == nil ? .read : .readwrite
        self.get = get
        self.set = set
    }
}
