

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
