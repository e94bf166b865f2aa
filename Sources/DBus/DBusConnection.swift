import CDBus
#if canImport(Glibc)
import Glibc
#endif
public import Logging
import Synchronization

/// A connection to a message bus (system, session, or a private address).
///
/// Once connected, libdbus is used from the process's `IOReactor` thread only: it
/// sends what callers hand it, reads and dispatches when the bus socket is ready,
/// and otherwise sleeps with the reactor (no periodic wake-ups). Everything else
/// talks to it with ``DBusMessage`` values, so no libdbus object ever crosses
/// threads and nothing blocks the Swift cooperative pool.
public final class DBusConnection: Sendable {
    /// Which bus to connect to.
    public enum Bus: Sendable, Hashable {
        case system
        case session
        /// A bus at a D-Bus address, e.g. `unix:path=/tmp/bus` (private buses in tests).
        case address(String)
    }

    let core: DBusConnectionCore
    /// Who may read ``DBusInterface/privateProperties``: nil, everyone.
    private let privateReaders = Mutex<(@Sendable (String) async -> Bool)?>(nil)

    /// Sets who may read private properties: `check` gets the caller's unique name.
    public func setPrivateReaders(_ check: @escaping @Sendable (String) async -> Bool) {
        privateReaders.withLock { $0 = check }
    }

    private func mayReadPrivate(_ sender: String?) async -> Bool {
        guard let check = privateReaders.withLock({ $0 }) else { return true }
        guard let sender else { return false }
        return await check(sender)
    }

    /// The bus this connection is on.
    public let bus: Bus

    /// This connection's unique name on the bus (e.g. `:1.42`).
    public var uniqueName: String { core.uniqueName }

    /// The default time a call may take.
    public static let defaultTimeout: Duration = .seconds(25)

    private init(core: DBusConnectionCore, bus: Bus) {
        self.core = core
        self.bus = bus
    }

    /// Connects and registers with the bus.
    /// - Throws: ``DBusError`` when the bus cannot be reached.
    public static func connect(to bus: Bus, logger: Logger = Logger(label: "mediaroute.dbus")) async throws -> DBusConnection {
        let core = DBusConnectionCore(logger: logger)
        try await core.start(bus)
        let connection = DBusConnection(core: core, bus: bus)
        core.attach(connection)
        try await connection.installNameTracking()
        return connection
    }

    deinit {
        core.stop()
    }

    /// Closes the connection; pending calls fail with `Disconnected`, signal streams end.
    public func close() {
        core.stop()
    }

    /// Whether the connection is still open.
    public var isConnected: Bool { core.isConnected }

    // MARK: Calls

    /// Calls a method and returns the reply's body.
    /// - Throws: ``DBusError`` — the peer's error (its name kept), `Timeout`, `Disconnected`, `NoReply`.
    ///
    /// `replyHandler`, when given, gets a successful reply's body on the
    /// connection's reactor thread before this call returns: in the order the reply
    /// arrived among signals, so a cache that ``handleSignals(matchingAny:finished:_:)``
    /// keeps current can take a full read without losing a signal sent after it.
    public func call(
        destination: String?, path: DBusObjectPath, interface: String?, member: String,
        _ arguments: [DBusValue] = [], timeout: Duration = DBusConnection.defaultTimeout,
        replyHandler: (@Sendable ([DBusValue]) -> Void)? = nil
    ) async throws(DBusError) -> [DBusValue] {
        let message = DBusMessage.methodCall(
            destination: destination, path: path, interface: interface, member: member, body: arguments)
        let reply = try await core.sendWithReply(message, timeout: timeout, replyHandler: replyHandler)
        if let error = reply.error { throw error }
        return reply.body
    }

    /// Sends a message without waiting for anything (signals, replies).
    public func send(_ message: DBusMessage) {
        core.enqueue(message)
    }

    /// Emits a signal from an object of this connection.
    public func emitSignal(path: DBusObjectPath, interface: String, member: String, _ body: [DBusValue] = []) {
        core.enqueue(.signal(path: path, interface: interface, member: member, body: body))
    }

    // MARK: Signals

    /// Signals matching `rule`, in arrival order, until the stream is dropped
    /// (the match is then removed from the bus) or the connection closes.
    public func signals(matching rule: DBusMatchRule) async throws(DBusError) -> AsyncStream<DBusMessage> {
        try await signals(matchingAny: [rule])
    }

    /// Signals matching any of `rules`, in the order they arrived on the connection
    /// (one stream keeps, say, a peer's signals and its `NameOwnerChanged` in order).
    /// Give disjoint rules: a signal matching two rules is delivered twice.
    public func signals(matchingAny rules: [DBusMatchRule]) async throws(DBusError) -> AsyncStream<DBusMessage> {
        let (stream, continuation) = AsyncStream.makeStream(of: DBusMessage.self)
        let subscription = try await handleSignals(matchingAny: rules, finished: { continuation.finish() }) { continuation.yield($0) }
        continuation.onTermination = { _ in subscription.cancel() }
        return stream
    }

    /// Calls `handler` for each signal matching any of `rules`, on the
    /// connection's reactor thread, in arrival order, until the subscription is
    /// cancelled or the connection closes (then `finished` is called once).
    ///
    /// For consumers that must keep up with bursts (BlueZ's object manager with
    /// hundreds of devices): no task or thread hand-off per signal. The handler
    /// must return quickly and must not wait on this connection — its replies
    /// arrive on the same thread. Keep the returned subscription: releasing it cancels.
    public func handleSignals(
        matchingAny rules: [DBusMatchRule], finished: @escaping @Sendable () -> Void = {},
        _ handler: @escaping @Sendable (DBusMessage) -> Void
    ) async throws(DBusError) -> DBusSignalSubscription {
        try await subscribe(matchingAny: rules, finished: finished, delivery: .decoded(handler))
    }

    /// Owner changes of one name (a peer that restarts shows as lost, then a new owner).
    public func nameOwnerChanges(of name: String) async throws(DBusError) -> AsyncStream<DBusNameOwnerChange> {
        let signals = try await self.signals(matching: DBusNameOwnerChange.matchRule(for: name))
        return AsyncStream { continuation in
            let task = Task {
                for await signal in signals {
                    if let change = DBusNameOwnerChange(signal) { continuation.yield(change) }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    // MARK: Names

    /// Asks for a well-known name; returns whether this connection now owns it.
    public func requestName(_ name: String, replaceExisting: Bool = false) async throws(DBusError) -> Bool {
        var flags = MR_DBUS_NAME_FLAG_DO_NOT_QUEUE
        if replaceExisting { flags |= MR_DBUS_NAME_FLAG_REPLACE_EXISTING }
        let reply = try await call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "RequestName", [.string(name), .uint32(flags)])
        let code = reply.first?.integer ?? 0
        return code == Int64(MR_DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER) || code == Int64(MR_DBUS_REQUEST_NAME_REPLY_ALREADY_OWNER)
    }

    /// Gives a well-known name up.
    public func releaseName(_ name: String) async throws(DBusError) {
        _ = try await call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "ReleaseName", [.string(name)])
    }

    /// The unique name owning `name`, or nil when nobody does.
    public func nameOwner(of name: String) async throws(DBusError) -> String? {
        try await lookUpOwner(of: name)
    }

    private func installNameTracking() async throws(DBusError) {
        // One match for every NameOwnerChanged keeps the owner cache of watched names current.
        _ = try await call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "AddMatch",
            [.string("type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged'")])
    }

    // MARK: Object export

    /// Exports an object at `path`, replacing any object there. Below an object
    /// manager, `InterfacesAdded` is emitted.
    public func export(_ object: DBusObject, at path: DBusObjectPath) async {
        core.setObject(object, at: path)
        if let manager = core.managerPath(above: path) {
            var interfaces: [DBusDictEntry] = []
            for interface in object.interfaces {
                // A broadcast: private values stay out of it.
                interfaces.append(DBusDictEntry(.string(interface.name), await Self.properties(of: interface, includingPrivate: false)))
            }
            emitSignal(
                path: manager, interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesAdded",
                [.objectPath(path), .dictionary(keySignature: "s", valueSignature: "a{sv}", interfaces)])
        }
    }

    /// Removes the object at `path`. Below an object manager, `InterfacesRemoved` is emitted.
    public func unexport(_ path: DBusObjectPath) {
        guard let object = core.removeObject(at: path) else { return }
        if let manager = core.managerPath(above: path) {
            emitSignal(
                path: manager, interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesRemoved",
                [.objectPath(path), .strings(object.interfaces.map(\.name))])
        }
    }

    /// Emits `PropertiesChanged` for an exported object's interface.
    public func emitPropertiesChanged(
        path: DBusObjectPath, interface: String, changed: [String: DBusValue], invalidated: [String] = []
    ) {
        var changed = changed, invalidated = invalidated
        // A broadcast: a private property's new value is not in it, only that it changed.
        if let hidden = core.object(at: path)?.interface(named: interface)?.privateProperties, !hidden.isEmpty {
            for name in hidden where changed.removeValue(forKey: name) != nil && !invalidated.contains(name) { invalidated.append(name) }
        }
        emitSignal(
            path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
            [.string(interface), .properties(changed), .strings(invalidated)])
    }

    static func properties(of interface: DBusInterface, includingPrivate: Bool = true) async -> DBusValue {
        let shown = { (property: DBusProperty) in property.access != .write && (includingPrivate || !interface.privateProperties.contains(property.name)) }
        if let snapshot = interface.snapshot {
            // One read for every property, so GetAll answers from one consistent state.
            let all = await snapshot()
            var values: [String: DBusValue] = [:]
            for property in interface.properties where shown(property) {
                values[property.name] = all[property.name]
            }
            return .properties(values)
        }
        var values: [String: DBusValue] = [:]
        for property in interface.properties where shown(property) {
            values[property.name] = await property.get()
        }
        return .properties(values)
    }

    // MARK: Serving calls (from the reactor thread)

    func serve(_ call: DBusMessage) async {
        let reply: DBusMessage
        do {
            reply = call.reply(try await answer(call))
        } catch let error as DBusError {
            reply = call.errorReply(error)
        } catch {
            reply = call.errorReply(DBusError(name: DBusError.failedName, message: "\(error)"))
        }
        if !call.noReplyExpected { send(reply) }
    }

    private func answer(_ call: DBusMessage) async throws -> [DBusValue] {
        guard let path = call.path, let member = call.member else {
            throw DBusError(name: DBusError.unknownMethodName, message: "no path or member")
        }
        let object = core.object(at: path)
        switch call.interface {
        case "org.freedesktop.DBus.Introspectable"?:
            guard member == "Introspect" else { break }
            return [.string(DBusIntrospection.xml(for: object, children: core.childNames(of: path)))]
        case "org.freedesktop.DBus.Properties"?:
            guard let object else { break }
            return try await answerProperties(call, member: member, object: object)
        case "org.freedesktop.DBus.ObjectManager"?:
            guard let object, object.isObjectManager, member == "GetManagedObjects" else { break }
            var entries: [DBusDictEntry] = []
            let includingPrivate = await mayReadPrivate(call.sender)
            for (childPath, child) in core.objects(below: path) {
                var interfaces: [DBusDictEntry] = []
                for interface in child.interfaces {
                    interfaces.append(DBusDictEntry(.string(interface.name), await Self.properties(of: interface, includingPrivate: includingPrivate)))
                }
                entries.append(DBusDictEntry(
                    .objectPath(childPath), .dictionary(keySignature: "s", valueSignature: "a{sv}", interfaces)))
            }
            return [.dictionary(keySignature: "o", valueSignature: "a{sa{sv}}", entries)]
        default:
            break
        }
        guard let object else {
            if call.interface == "org.freedesktop.DBus.Introspectable" || call.interface == nil && member == "Introspect" {
                return [.string(DBusIntrospection.xml(for: nil, children: core.childNames(of: path)))]
            }
            throw DBusError(name: DBusError.unknownObjectName, message: "no object at \(path)")
        }
        let candidates = object.interfaces.filter { call.interface == nil || $0.name == call.interface }
        guard !candidates.isEmpty else {
            throw DBusError(name: DBusError.unknownInterfaceName, message: "\(path) has no interface \(call.interface ?? "")")
        }
        guard let method = candidates.lazy.compactMap({ $0.methods.first { $0.name == member } }).first else {
            throw DBusError(name: DBusError.unknownMethodName, message: "no method \(member) on \(call.interface ?? "") at \(path)")
        }
        guard call.signature == method.inputSignature else {
            throw DBusError.invalidArgs("\(member) takes (\(method.inputSignature)), got (\(call.signature))")
        }
        return try await method.handler(DBusMethodCall(message: call))
    }

    private func answerProperties(_ call: DBusMessage, member: String, object: DBusObject) async throws -> [DBusValue] {
        let args = call.body
        func property(_ interfaceName: String?, _ name: String?) throws -> DBusProperty {
            guard let interfaceName, let name else { throw DBusError.invalidArgs("expected interface and property names") }
            guard let interface = object.interface(named: interfaceName) else {
                throw DBusError(name: DBusError.unknownInterfaceName, message: "no interface \(interfaceName)")
            }
            guard let property = interface.properties.first(where: { $0.name == name }) else {
                throw DBusError(name: DBusError.unknownPropertyName, message: "no property \(interfaceName).\(name)")
            }
            return property
        }
        switch member {
        case "Get":
            guard call.signature == "ss" else { throw DBusError.invalidArgs("Get takes (ss)") }
            let found = try property(args[0].string, args[1].string)
            guard found.access != .write else { throw DBusError(name: DBusError.accessDeniedName, message: "\(found.name) is write-only") }
            if let name = args[0].string, object.interface(named: name)?.privateProperties.contains(found.name) ?? false {
                guard await mayReadPrivate(call.sender) else {
                    throw DBusError(name: DBusError.accessDeniedName, message: "\(found.name) is private to the session's owner")
                }
            }
            return [.variant(await found.get())]
        case "GetAll":
            guard call.signature == "s", let name = args[0].string else { throw DBusError.invalidArgs("GetAll takes (s)") }
            guard let interface = object.interface(named: name) else {
                // An unknown interface has no properties (as GDBus and sd-bus answer).
                return [.properties([:])]
            }
            let includingPrivate = interface.privateProperties.isEmpty ? true : await mayReadPrivate(call.sender)
            return [await Self.properties(of: interface, includingPrivate: includingPrivate)]
        case "Set":
            guard call.signature == "ssv", case .variant(let value) = args[2] else { throw DBusError.invalidArgs("Set takes (ssv)") }
            let found = try property(args[0].string, args[1].string)
            guard let setter = found.set else {
                throw DBusError(name: DBusError.propertyReadOnlyName, message: "\(found.name) is read-only")
            }
            guard value.signature == found.signature else {
                throw DBusError.invalidArgs("\(found.name) is \(found.signature), got \(value.signature)")
            }
            try await setter(value)
            return []
        default:
            throw DBusError(name: DBusError.unknownMethodName, message: "no method \(member) on org.freedesktop.DBus.Properties")
        }
    }
}

extension DBusConnection: DBusSignalRouting {
    func withRoutes<T>(_ body: (inout DBusSignalRoutes, _ open: Bool) -> T) -> T {
        core.withRoutes(body)
    }
}
