

/// A named, typed argument of a method or signal, for introspection.
public struct DBusArgument: Sendable, Hashable {
    public var name: String
    public var signature: String
    public init(_ name: String, _ signature: String) {
        self.name = name
        self.signature = signature
    }
}
