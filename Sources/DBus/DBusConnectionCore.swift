import CDBus
#if canImport(Glibc)
import Glibc
#endif
import IOReactor
import Logging
import Synchronization

/// The state a connection shares between the reactor thread and its callers, and its
/// work on the reactor thread.
///
/// Only the ``IOReactor``'s thread touches libdbus once the connection is made (its
/// socket is watched there; sends are handed to it); the rest is behind one `Mutex`,
/// never held across an await.
final class DBusConnectionCore: Sendable {
    private struct State {
        var routes = DBusSignalRoutes()
        var objects: [DBusObjectPath: DBusObject] = [:]
        var uniqueName = ""
        var connected = false
        var stopped = false
        var watch: IOWatch?
        weak var connection: DBusConnection?
    }

    /// libdbus's connection.
    private final class Handle: @unchecked Sendable {
        // Safe: set once, before the reactor watches the socket; from then on only the
        // reactor thread uses it (sends, reads, dispatch, the final close), one call at a time.
        let connection: OpaquePointer
        init(_ connection: OpaquePointer) { self.connection = connection }
    }

    private let state = Mutex(State())
    private let handle = Mutex<Handle?>(nil)
    /// Calls waiting for a reply, by serial (libdbus gives it on the reactor thread, which
    /// also reads the replies, so a reply never comes before its call is in the table).
    private let pending: DBusPendingCalls
    private let reactor: IOReactor
    let logger: Logger

    init(reactor: IOReactor = .shared, logger: Logger) {
        self.reactor = reactor
        self.logger = logger
        pending = DBusPendingCalls(reactor: reactor)
    }

    var uniqueName: String { state.withLock { $0.uniqueName } }
    var isConnected: Bool { state.withLock { $0.connected && !$0.stopped } }

    // MARK: Start and stop

    /// Connects and registers with the bus (on the caller's thread: libdbus's connect
    /// and `Hello` block until the bus answers), then hands the connection to the reactor.
    func start(_ bus: DBusConnection.Bus) async throws {
        _ = dbus_threads_init_default()
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        let opened: OpaquePointer?
        switch bus {
        case .system:
            opened = dbus_bus_get_private(DBUS_BUS_SYSTEM, &error)
        case .session:
            opened = dbus_bus_get_private(DBUS_BUS_SESSION, &error)
        case .address(let address):
            opened = dbus_connection_open_private(address, &error)
            if let opened, dbus_bus_register(opened, &error) == 0 {
                dbus_connection_close(opened)
                dbus_connection_unref(opened)
                throw Self.take(&error)
            }
        }
        guard let connection = opened else { throw Self.take(&error) }
        dbus_connection_set_exit_on_disconnect(connection, 0)
        var fd: Int32 = -1
        guard dbus_connection_get_unix_fd(connection, &fd) != 0 else {
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
            throw DBusError(name: DBusError.failedName, message: "the bus connection has no socket")
        }
        let unique = dbus_bus_get_unique_name(connection).map { String(cString: $0) } ?? ""
        let context = Unmanaged.passUnretained(self).toOpaque()
        dbus_connection_add_filter(connection, { _, message, context in
            let core = Unmanaged<DBusConnectionCore>.fromOpaque(context!).takeUnretainedValue()
            return core.filter(message!)
        }, context, nil)
        handle.withLock { $0 = Handle(connection) }
        state.withLock { state in
            state.uniqueName = unique
            state.connected = true
        }
        do {
            // The watch keeps the core alive until the connection ends.
            let watch = try reactor.watch(fd, for: .readable) { _ in self.service() }
            state.withLock { $0.watch = watch }
        } catch {
            finish(reason: "cannot watch the bus socket")
            throw DBusError(name: DBusError.failedName, message: "cannot watch the bus socket: \(error)")
        }
        // libdbus may have read messages with the Hello reply already.
        reactor.execute { self.service() }
    }

    func attach(_ connection: DBusConnection) {
        state.withLock { $0.connection = connection }
    }

    func stop() {
        let alreadyStopped = state.withLock { state -> Bool in
            defer { state.stopped = true }
            return state.stopped
        }
        guard !alreadyStopped else { return }
        reactor.execute {
            // What was queued before close() still goes out (signals, replies), for at most
            // half a second: a peer that stops reading must not hold the reactor thread.
            if let connection = self.handle.withLock({ $0?.connection }) {
                let deadline = self.reactor.now + .milliseconds(500)
                while dbus_connection_has_messages_to_send(connection) != 0, self.reactor.now < deadline {
                    guard dbus_connection_read_write(connection, 50) != 0 else { break }
                }
            }
            self.finish(reason: "the connection was closed")
        }
    }

    // MARK: Sending

    func enqueue(_ message: DBusMessage) {
        guard !state.withLock({ $0.stopped }) else { return }
        reactor.execute { self.send(message, replying: nil) }
    }

    func sendWithReply(
        _ message: DBusMessage, timeout: Duration, replyHandler: (@Sendable ([DBusValue]) -> Void)? = nil
    ) async throws(DBusError) -> DBusMessage {
        let what = "\(message.member ?? "call") got no reply within \(timeout)"
        do {
            return try await withCheckedThrowingContinuation { continuation in
                guard state.withLock({ !$0.stopped && $0.connected }) else {
                    continuation.resume(throwing: DBusError.disconnected("the connection is closed"))
                    return
                }
                reactor.execute {
                    self.send(message, replying: PendingReply(continuation: continuation, handler: replyHandler, timeout: timeout, what: what))
                }
            }
        } catch let error as DBusError {
            throw error
        } catch {
            throw DBusError(name: DBusError.failedName, message: "\(error)")
        }
    }

    /// Who waits for a call's reply, until libdbus has given the call its serial.
    private struct PendingReply: Sendable {
        let continuation: CheckedContinuation<DBusMessage, any Error>
        let handler: (@Sendable ([DBusValue]) -> Void)?
        let timeout: Duration
        let what: String
    }

    // MARK: Subscriptions and names

    func withRoutes<T>(_ body: (inout DBusSignalRoutes, _ open: Bool) -> T) -> T {
        state.withLock { body(&$0.routes, !$0.stopped) }
    }

    // MARK: Objects

    func setObject(_ object: DBusObject, at path: DBusObjectPath) {
        state.withLock { $0.objects[path] = object }
    }

    func removeObject(at path: DBusObjectPath) -> DBusObject? {
        state.withLock { $0.objects.removeValue(forKey: path) }
    }

    func object(at path: DBusObjectPath) -> DBusObject? {
        state.withLock { $0.objects[path] }
    }

    func objects(below path: DBusObjectPath) -> [(DBusObjectPath, DBusObject)] {
        state.withLock { state in
            state.objects.filter { $0.key != path && $0.key.isDescendant(of: path) }.sorted { $0.key < $1.key }
        }
    }

    /// The nearest object manager strictly above `path`.
    func managerPath(above path: DBusObjectPath) -> DBusObjectPath? {
        state.withLock { state in
            state.objects.filter { $0.value.isObjectManager && $0.key != path && path.isDescendant(of: $0.key) }
                .map(\.key).max { $0.rawValue.count < $1.rawValue.count }
        }
    }

    /// Names of the direct children of `path` that lead to exported objects.
    func childNames(of path: DBusObjectPath) -> [String] {
        let prefix = path.rawValue == "/" ? "/" : path.rawValue + "/"
        let names = state.withLock { state in
            state.objects.keys.compactMap { key -> String? in
                guard key.rawValue.hasPrefix(prefix), key != path else { return nil }
                return key.rawValue.dropFirst(prefix.count).split(separator: "/").first.map(String.init)
            }
        }
        return Array(Set(names))
    }

    // MARK: On the reactor thread

    private static func take(_ error: inout CDBus.DBusError) -> DBusError {
        defer { dbus_error_free(&error) }
        let name = error.name.map { String(cString: $0) } ?? DBusError.failedName
        let message = error.message.map { String(cString: $0) } ?? ""
        return DBusError(name: name, message: message)
    }

    /// The socket is ready (or a send was queued): write what libdbus has queued, read
    /// and dispatch what came, and watch for room to write only while something waits.
    private func service() {
        guard let connection = handle.withLock({ $0?.connection }) else { return }
        _ = dbus_connection_read_write(connection, 0)
        while dbus_connection_dispatch(connection) == DBUS_DISPATCH_DATA_REMAINS {}
        guard dbus_connection_get_is_connected(connection) != 0 else {
            logger.warning("disconnected from the bus")
            finish(reason: "the connection was closed")
            return
        }
        let writing = dbus_connection_has_messages_to_send(connection) != 0
        state.withLock { $0.watch }?.setInterest(writing ? [.readable, .writable] : .readable)
    }

    private func send(_ message: DBusMessage, replying reply: PendingReply?) {
        guard let connection = handle.withLock({ $0?.connection }) else {
            reply?.continuation.resume(throwing: DBusError.disconnected("the connection is closed"))
            return
        }
        let cMessage: OpaquePointer
        do {
            cMessage = try message.makeCMessage()
        } catch {
            reply?.continuation.resume(throwing: error)
            logger.warning("cannot encode message", metadata: ["member": "\(message.member ?? "")", "error": "\(error)"])
            return
        }
        defer { dbus_message_unref(cMessage) }
        var serial: UInt32 = 0
        guard dbus_connection_send(connection, cMessage, &serial) != 0 else {
            reply?.continuation.resume(throwing: DBusError(name: "org.freedesktop.DBus.Error.NoMemory", message: "send failed"))
            return
        }
        if let reply, !pending.add(serial, reply.continuation, replyHandler: reply.handler, timeout: reply.timeout, what: reply.what) {
            reply.continuation.resume(throwing: DBusError.disconnected("the connection is closed"))
        }
        service()
    }

    /// Every incoming message passes here, on the reactor thread.
    private func filter(_ cMessage: OpaquePointer) -> DBusHandlerResult {
        let message = DBusMessage(cMessage: cMessage)
        switch message.kind {
        case .methodReturn, .error:
            guard let call = pending.take(message.replySerial) else { return DBUS_HANDLER_RESULT_HANDLED }
            if message.kind == .methodReturn { call.replyHandler?(message.body) }
            call.continuation.resume(returning: message)
            return DBUS_HANDLER_RESULT_HANDLED
        case .signal:
            deliver(message)
            // Let libdbus see Disconnected so the connection notices it.
            return message.interface == "org.freedesktop.DBus.Local"
                ? DBUS_HANDLER_RESULT_NOT_YET_HANDLED : DBUS_HANDLER_RESULT_HANDLED
        case .methodCall:
            if message.interface == "org.freedesktop.DBus.Peer" { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
            guard let connection = state.withLock({ $0.connection }) else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
            Task { await connection.serve(message) }
            return DBUS_HANDLER_RESULT_HANDLED
        }
    }

    private func deliver(_ signal: DBusMessage) {
        for delivery in state.withLock({ $0.routes.deliveries(for: signal, bodyDecoded: true) }) ?? DBusSignalRoutes.Deliveries() {
            // Raw bodies are offered by DBusSignalConnection only; nothing subscribes so here.
            if case .decoded(let handler) = delivery { handler(signal) }
        }
    }

    /// Ends the connection (on the reactor thread): libdbus's connection closes, calls
    /// fail, subscriptions finish.
    private func finish(reason: String) {
        let (watch, subscriptions) = state.withLock { state -> (IOWatch?, [DBusSignalRoutes.Subscription]) in
            state.connected = false
            state.stopped = true
            defer { state.watch = nil }
            return (state.watch, state.routes.removeAll())
        }
        watch?.cancel()
        if let connection = handle.withLock({ handle in defer { handle = nil }; return handle?.connection }) {
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
        }
        pending.close(failingWith: DBusError.disconnected(reason))
        for subscription in subscriptions { subscription.finish() }
    }
}
