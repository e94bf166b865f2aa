

/// A method call delivered to an exported object.
public struct DBusMethodCall: Sendable {
    /// The whole message (sender, path, serial).
    public let message: DBusMessage
    public var arguments: [DBusValue] { message.body }
    /// The caller's unique bus name.
    public var sender: String { message.sender ?? "" }
}
