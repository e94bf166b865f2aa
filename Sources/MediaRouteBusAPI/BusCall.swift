public import DBus
import RoutingModel

/// A typed call of one D-Bus interface: decoded once at the edge, encoded once by the client.
public protocol BusCall: Sendable {
    /// Every method of the interface.
    static var methods: [BusMethodDescription] { get }
    /// Decodes a call; refuses missing or mistyped arguments with `InvalidArgs`.
    init(member: String, arguments: [DBusValue]) throws(DBusError)
    var member: String { get }
    var arguments: [DBusValue] { get }
}

extension BusCall {
    /// The exported methods of the interface, each decoding its call before `handler` sees it.
    public static func exportedMethods(
        _ handler: @escaping @Sendable (Self, DBusMethodCall) async throws -> [DBusValue]
    ) -> [DBusMethod] {
        methods.map { method in
            DBusMethod(method.member, inputs: method.inputs, outputs: method.outputs) { call in
                try await handler(try Self(member: method.member, arguments: call.arguments), call)
            }
        }
    }
}
