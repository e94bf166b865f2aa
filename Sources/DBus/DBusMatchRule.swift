import CDBus
#if canImport(Glibc)
import Glibc
#endif
import Logging
import Synchronization

/// A rule selecting signals: every field that is set must match.
public struct DBusMatchRule: Sendable, Hashable {
    /// A unique or well-known name; signals from any other sender are dropped.
    /// For a well-known name, the current owner is tracked through `NameOwnerChanged`.
    public var sender: String?
    public var path: DBusObjectPath?
    /// Matches the path and every path below it.
    public var pathNamespace: DBusObjectPath?
    public var interface: String?
    public var member: String?
    /// The first argument, when it is a string (e.g. the interface of `PropertiesChanged`).
    public var arg0: String?

    public init(
        sender: String? = nil, path: DBusObjectPath? = nil, pathNamespace: DBusObjectPath? = nil,
        interface: String? = nil, member: String? = nil, arg0: String? = nil
    ) {
        self.sender = sender
        self.path = path
        self.pathNamespace = pathNamespace
        self.interface = interface
        self.member = member
        self.arg0 = arg0
    }

    /// The rule in the bus daemon's `AddMatch` syntax.
    public var ruleString: String {
        var parts = ["type='signal'"]
        if let sender { parts.append("sender='\(sender)'") }
        if let path { parts.append("path='\(path)'") }
        if let pathNamespace, pathNamespace.rawValue != "/" { parts.append("path_namespace='\(pathNamespace)'") }
        if let interface { parts.append("interface='\(interface)'") }
        if let member { parts.append("member='\(member)'") }
        if let arg0 { parts.append("arg0='\(arg0)'") }
        return parts.joined(separator: ",")
    }

    func matches(_ message: DBusMessage, ownerOfSender: String?) -> Bool {
        guard message.kind == .signal else { return false }
        if let sender {
            // A well-known name matches only its current owner; a unique name only itself.
            let expected = sender.hasPrefix(":") || sender == "org.freedesktop.DBus" ? sender : ownerOfSender
            guard let expected, message.sender == expected else { return false }
        }
        if let path, message.path != path { return false }
        if let pathNamespace, let messagePath = message.path, !messagePath.isDescendant(of: pathNamespace) { return false }
        if let interface, message.interface != interface { return false }
        if let member, message.member != member { return false }
        if let arg0, message.body.first?.string != arg0 { return false }
        return true
    }
}
