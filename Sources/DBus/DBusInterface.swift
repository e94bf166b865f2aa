

/// One interface of an exported object.
public struct DBusInterface: Sendable {
    public var name: String
    public var methods: [DBusMethod]
    public var properties: [DBusProperty]
    public var signals: [DBusSignalDescription]
    /// Every property's value at once; when set, `GetAll` (and the ObjectManager) read it
    /// once instead of calling each property's getter.
    public var snapshot: (@Sendable () async -> [String: DBusValue])?
    /// Properties only callers the connection's ``DBusConnection/setPrivateReaders(_:)`` check
    /// admits may read: others get `AccessDenied` from `Get` and nothing of them from `GetAll`
    /// and `GetManagedObjects`; broadcast signals (`InterfacesAdded`, `PropertiesChanged`)
    /// never carry their values (a change lists them as invalidated).
    public var privateProperties: Set<String> = []

    public init(
        _ name: String, methods: [DBusMethod] = [], properties: [DBusProperty] = [],
        signals: [DBusSignalDescription] = []
    ) {
        self.name = name
        self.methods = methods
        self.properties = properties
        self.signals = signals
    }

    /// An interface whose read-only properties all come from one snapshot: `Get` picks one value
    /// of it, `GetAll` answers the whole of it. A property the snapshot lacks reads as its type's zero.
    public init(
        _ name: String, methods: [DBusMethod] = [], properties signatures: [(name: String, signature: String)],
        signals: [DBusSignalDescription] = [], snapshot: @escaping @Sendable () async -> [String: DBusValue]
    ) {
        self.init(name, methods: methods, properties: signatures.map { entry in
            DBusProperty(entry.name, signature: entry.signature) {
                await snapshot()[entry.name] ?? DBusValue.zero(of: entry.signature) ?? .string("")
            }
        }, signals: signals)
        self.snapshot = snapshot
    }
}
