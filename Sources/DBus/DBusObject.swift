/// A named, typed argument of a method or signal, for introspection.
public struct DBusArgument: Sendable, Hashable {
    public var name: String
    public var signature: String
    public init(_ name: String, _ signature: String) {
        self.name = name
        self.signature = signature
    }
}

/// A method call delivered to an exported object.
public struct DBusMethodCall: Sendable {
    /// The whole message (sender, path, serial).
    public let message: DBusMessage
    public var arguments: [DBusValue] { message.body }
    /// The caller's unique bus name.
    public var sender: String { message.sender ?? "" }
}

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

/// A signal an exported interface emits, for introspection.
public struct DBusSignalDescription: Sendable {
    public var name: String
    public var arguments: [DBusArgument]
    public init(_ name: String, arguments: [DBusArgument] = []) {
        self.name = name
        self.arguments = arguments
    }
}

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

/// An object to export at a path: its interfaces, and whether it is an
/// `org.freedesktop.DBus.ObjectManager` for the objects below it.
public struct DBusObject: Sendable {
    public var interfaces: [DBusInterface]
    public var isObjectManager: Bool

    public init(interfaces: [DBusInterface], isObjectManager: Bool = false) {
        self.interfaces = interfaces
        self.isObjectManager = isObjectManager
    }

    func interface(named name: String) -> DBusInterface? {
        interfaces.first { $0.name == name }
    }
}

// MARK: - Introspection

enum DBusIntrospection {
    static let header = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        """

    static let standardInterfaces = """
          <interface name="org.freedesktop.DBus.Introspectable">
            <method name="Introspect"><arg name="xml_data" type="s" direction="out"/></method>
          </interface>
          <interface name="org.freedesktop.DBus.Peer">
            <method name="Ping"/>
            <method name="GetMachineId"><arg name="machine_uuid" type="s" direction="out"/></method>
          </interface>
          <interface name="org.freedesktop.DBus.Properties">
            <method name="Get">
              <arg name="interface_name" type="s" direction="in"/>
              <arg name="property_name" type="s" direction="in"/>
              <arg name="value" type="v" direction="out"/>
            </method>
            <method name="GetAll">
              <arg name="interface_name" type="s" direction="in"/>
              <arg name="props" type="a{sv}" direction="out"/>
            </method>
            <method name="Set">
              <arg name="interface_name" type="s" direction="in"/>
              <arg name="property_name" type="s" direction="in"/>
              <arg name="value" type="v" direction="in"/>
            </method>
            <signal name="PropertiesChanged">
              <arg name="interface_name" type="s"/>
              <arg name="changed_properties" type="a{sv}"/>
              <arg name="invalidated_properties" type="as"/>
            </signal>
          </interface>

        """

    static let objectManagerInterface = """
          <interface name="org.freedesktop.DBus.ObjectManager">
            <method name="GetManagedObjects">
              <arg name="objects" type="a{oa{sa{sv}}}" direction="out"/>
            </method>
            <signal name="InterfacesAdded">
              <arg name="object" type="o"/>
              <arg name="interfaces" type="a{sa{sv}}"/>
            </signal>
            <signal name="InterfacesRemoved">
              <arg name="object" type="o"/>
              <arg name="interfaces" type="as"/>
            </signal>
          </interface>

        """

    static func escape(_ text: String) -> String {
        var result = ""
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            default: result.append(character)
            }
        }
        return result
    }

    /// The introspection XML of `object` (nil: no object there, only children) with its child node names.
    static func xml(for object: DBusObject?, children: [String]) -> String {
        var xml = header + "\n<node>\n"
        if let object {
            xml += standardInterfaces
            if object.isObjectManager { xml += objectManagerInterface }
            for interface in object.interfaces {
                xml += "  <interface name=\"\(escape(interface.name))\">\n"
                for method in interface.methods {
                    xml += "    <method name=\"\(escape(method.name))\">\n"
                    for arg in method.inputs {
                        xml += "      <arg name=\"\(escape(arg.name))\" type=\"\(escape(arg.signature))\" direction=\"in\"/>\n"
                    }
                    for arg in method.outputs {
                        xml += "      <arg name=\"\(escape(arg.name))\" type=\"\(escape(arg.signature))\" direction=\"out\"/>\n"
                    }
                    xml += "    </method>\n"
                }
                for signal in interface.signals {
                    xml += "    <signal name=\"\(escape(signal.name))\">\n"
                    for arg in signal.arguments {
                        xml += "      <arg name=\"\(escape(arg.name))\" type=\"\(escape(arg.signature))\"/>\n"
                    }
                    xml += "    </signal>\n"
                }
                for property in interface.properties {
                    xml += "    <property name=\"\(escape(property.name))\" type=\"\(escape(property.signature))\" access=\"\(property.access.rawValue)\"/>\n"
                }
                xml += "  </interface>\n"
            }
        }
        for child in children.sorted() {
            xml += "  <node name=\"\(escape(child))\"/>\n"
        }
        xml += "</node>\n"
        return xml
    }
}
