

/// A method an exported interface implements.
public struct DBusMethod: Sendable {
    public var name: String
    public var inputs: [DBusArgument]
    public var outputs: [DBusArgument]
    /// Answers the call. Throw a ``DBusError`` to reply with that error; any other
    /// error becomes `org.freedesktop.DBus.Error.Failed`.
    public var handler: @Sendable (DBusMethodCall) async throws -> [DBusValue]

    public init(
        _ name: String, inputs: [DBusArgument] = [], outputs: [DBusArgument] = [],
        handler: @escaping @Sendable (DBusMethodCall) async throws -> [DBusValue]
    ) {
        self.name = name
        self.inputs = inputs
        self.outputs = outputs
        self.handler = handler
    }

    var inputSignature: String { inputs.map(\.signature).joined() }
}
