

/// A signal an exported interface emits, for introspection.
public struct DBusSignalDescription: Sendable {
    public var name: String
    public var arguments: [DBusArgument]
    public init(_ name: String, arguments: [DBusArgument] = []) {
        self.name = name
        self.arguments = arguments
    }
}
