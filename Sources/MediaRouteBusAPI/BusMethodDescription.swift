public import DBus
import RoutingModel

/// One method of an interface of the daemon's bus API: its name and arguments, as
/// introspection shows them. The daemon builds its exported methods from these.
public struct BusMethodDescription: Sendable {
    public let member: String
    public let inputs: [DBusArgument]
    public let outputs: [DBusArgument]

    public init(_ member: String, inputs: [DBusArgument] = [], outputs: [DBusArgument] = []) {
        self.member = member
        self.inputs = inputs
        self.outputs = outputs
    }
}
