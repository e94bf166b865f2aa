/// An error from D-Bus: a reply of type ERROR from a peer (with its error name,
/// e.g. `org.bluez.Error.InProgress`), or a local failure named in the same
/// `org.freedesktop.DBus.Error.*` vocabulary.
public struct DBusError: Error, Sendable, Hashable, CustomStringConvertible {
    public let name: String
    public let message: String

    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    public var description: String { message.isEmpty ? name : "\(name): \(message)" }

    public static let failedName = "org.freedesktop.DBus.Error.Failed"
    public static let noReplyName = "org.freedesktop.DBus.Error.NoReply"
    public static let timeoutName = "org.freedesktop.DBus.Error.Timeout"
    public static let disconnectedName = "org.freedesktop.DBus.Error.Disconnected"
    public static let unknownMethodName = "org.freedesktop.DBus.Error.UnknownMethod"
    public static let unknownObjectName = "org.freedesktop.DBus.Error.UnknownObject"
    public static let unknownInterfaceName = "org.freedesktop.DBus.Error.UnknownInterface"
    public static let unknownPropertyName = "org.freedesktop.DBus.Error.UnknownProperty"
    public static let propertyReadOnlyName = "org.freedesktop.DBus.Error.PropertyReadOnly"
    public static let invalidArgsName = "org.freedesktop.DBus.Error.InvalidArgs"
    public static let accessDeniedName = "org.freedesktop.DBus.Error.AccessDenied"
    public static let serviceUnknownName = "org.freedesktop.DBus.Error.ServiceUnknown"

    public static func timeout(_ what: String) -> DBusError { DBusError(name: timeoutName, message: what) }
    public static func disconnected(_ what: String) -> DBusError { DBusError(name: disconnectedName, message: what) }
    public static func invalidArgs(_ what: String) -> DBusError { DBusError(name: invalidArgsName, message: what) }
}
