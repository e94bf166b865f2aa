import CDBus
#if canImport(Glibc)
import Glibc
#endif
import Logging
import Synchronization

/// A change of owner of a bus name (`NameOwnerChanged`); nil for no owner.
public struct DBusNameOwnerChange: Sendable, Hashable {
    public let name: String
    public let oldOwner: String?
    public let newOwner: String?

    public init(name: String, oldOwner: String?, newOwner: String?) {
        self.name = name
        self.oldOwner = oldOwner
        self.newOwner = newOwner
    }

    /// The change a `NameOwnerChanged` signal reports (nil for anything else).
    public init?(_ signal: DBusMessage) {
        guard signal.member == "NameOwnerChanged", signal.body.count == 3, let name = signal.body[0].string else { return nil }
        self.init(name: name, oldOwner: signal.body[1].string.flatMap { $0.isEmpty ? nil : $0 },
                  newOwner: signal.body[2].string.flatMap { $0.isEmpty ? nil : $0 })
    }

    /// The match rule for changes of `name`'s owner.
    public static func matchRule(for name: String) -> DBusMatchRule {
        DBusMatchRule(sender: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                      member: "NameOwnerChanged", arg0: name)
    }
}
