import CDBus
#if canImport(Glibc)
import Glibc
#endif
import Logging
import Synchronization

/// The state a connection shares between its I/O thread and its callers, and the I/O thread itself.
///
/// Only the I/O thread touches libdbus; the rest is behind one `Mutex`, never held across an await.
final class DBusConnectionCore: Sendable {
    private enum Command: Sendable {
        case send(DBusMessage, callID: UInt64?)
        case stop
    }

    private struct State {
        var commands: [Command] = []
        var nextCallID: UInt64 = 0
        /// Calls waiting for a reply, by call id.
        var pending: [UInt64: CheckedContinuation<DBusMessage, any Error>] = [:]
        /// Called on the I/O thread with a successful reply, before its caller resumes.
        var replyHandlers: [UInt64: @Sendable ([DBusValue]) -> Void] = [:]
        /// When each pending call times out, with what to say; the I/O thread's poll
        /// sleeps until the earliest, so an idle connection has no timers at all.
        var deadlines: [UInt64: (at: ContinuousClock.Instant, what: String)] = [:]
        /// Serial of a sent call → its call id.
        var callBySerial: [UInt32: UInt64] = [:]
        var routes = DBusSignalRoutes()
        var objects: [DBusObjectPath: DBusObject] = [:]
        var uniqueName = ""
        var connected = false
        var stopped = false
        weak var connection: DBusConnection?
    }

    private let state = Mutex(State())
    private let wakeFD: Int32
    let logger: Logger

    init(logger: Logger) {
        self.logger = logger
        wakeFD = mr_wake_fd()
    }

    deinit {
        close(wakeFD)
    }

    var uniqueName: String { state.withLock { $0.uniqueName } }
    var isConnected: Bool { state.withLock { $0.connected && !$0.stopped } }

    // MARK: Start and stop

    /// Starts the I/O thread, which connects; returns once registered with the bus.
    func start(_ bus: DBusConnection.Bus) async throws {
        _ = dbus_threads_init_default()
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let box = ThreadStart(core: self, bus: bus, ready: continuation)
            var thread = pthread_t()
            let context = Unmanaged.passRetained(box).toOpaque()
            let result = pthread_create(&thread, nil, { context in
                let box = Unmanaged<ThreadStart>.fromOpaque(context!).takeRetainedValue()
                box.core.run(bus: box.bus, ready: box.ready)
                return nil
            }, context)
            if result != 0 {
                Unmanaged<ThreadStart>.fromOpaque(context).release()
                continuation.resume(throwing: DBusError(name: DBusError.failedName, message: "cannot start the D-Bus thread"))
            } else {
                pthread_detach(thread)
            }
        }
    }

    func attach(_ connection: DBusConnection) {
        state.withLock { $0.connection = connection }
    }

    func stop() {
        let alreadyStopped = state.withLock { state -> Bool in
            defer { state.stopped = true }
            if !state.stopped { state.commands.append(.stop) }
            return state.stopped
        }
        if !alreadyStopped { wake() }
    }

    private func wake() {
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    // MARK: Sending

    func enqueue(_ message: DBusMessage) {
        let accepted = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.commands.append(.send(message, callID: nil))
            return true
        }
        if accepted { wake() }
    }

    func sendWithReply(
        _ message: DBusMessage, timeout: Duration, replyHandler: (@Sendable ([DBusValue]) -> Void)? = nil
    ) async throws(DBusError) -> DBusMessage {
        let id = state.withLock { state -> UInt64 in
            state.nextCallID += 1
            return state.nextCallID
        }
        let deadline = ContinuousClock.now + timeout
        let what = "\(message.member ?? "call") got no reply within \(timeout)"
        do {
            return try await withCheckedThrowingContinuation { continuation in
                let accepted = state.withLock { state -> Bool in
                    guard !state.stopped, state.connected else { return false }
                    state.pending[id] = continuation
                    if let replyHandler { state.replyHandlers[id] = replyHandler }
                    state.deadlines[id] = (deadline, what)
                    state.commands.append(.send(message, callID: id))
                    return true
                }
                if accepted {
                    wake()
                } else {
                    continuation.resume(throwing: DBusError.disconnected("the connection is closed"))
                }
            }
        } catch let error as DBusError {
            throw error
        } catch {
            throw DBusError(name: DBusError.failedName, message: "\(error)")
        }
    }

    private func fail(callID: UInt64, with error: DBusError) {
        let continuation = state.withLock { state -> CheckedContinuation<DBusMessage, any Error>? in
            state.callBySerial = state.callBySerial.filter { $0.value != callID }
            state.deadlines[callID] = nil
            state.replyHandlers[callID] = nil
            return state.pending.removeValue(forKey: callID)
        }
        continuation?.resume(throwing: error)
    }

    /// Fails overdue calls; returns the poll timeout until the next deadline (-1: none).
    private func expireCalls() -> Int32 {
        let now = ContinuousClock.now
        let overdue = state.withLock { state in state.deadlines.filter { $0.value.at <= now } }
        for (id, entry) in overdue { fail(callID: id, with: .timeout(entry.what)) }
        guard let next = state.withLock({ $0.deadlines.values.map(\.at).min() }) else { return -1 }
        return pollMilliseconds(until: next, from: now)
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

    // MARK: The I/O thread

    private func run(bus: DBusConnection.Bus, ready: CheckedContinuation<Void, any Error>) {
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        let connection: OpaquePointer?
        switch bus {
        case .system:
            connection = dbus_bus_get_private(DBUS_BUS_SYSTEM, &error)
        case .session:
            connection = dbus_bus_get_private(DBUS_BUS_SESSION, &error)
        case .address(let address):
            connection = dbus_connection_open_private(address, &error)
            if let connection, dbus_bus_register(connection, &error) == 0 {
                dbus_connection_close(connection)
                dbus_connection_unref(connection)
                ready.resume(throwing: Self.take(&error))
                return
            }
        }
        guard let connection else {
            ready.resume(throwing: Self.take(&error))
            return
        }
        dbus_connection_set_exit_on_disconnect(connection, 0)
        let unique = dbus_bus_get_unique_name(connection).map { String(cString: $0) } ?? ""
        let context = Unmanaged.passUnretained(self).toOpaque()
        dbus_connection_add_filter(connection, { _, message, context in
            let core = Unmanaged<DBusConnectionCore>.fromOpaque(context!).takeUnretainedValue()
            return core.filter(message!)
        }, context, nil)
        state.withLock { state in
            state.uniqueName = unique
            state.connected = true
        }
        ready.resume()
        loop(connection)
        dbus_connection_close(connection)
        dbus_connection_unref(connection)
        shutDown(reason: "the connection was closed")
    }

    private static func take(_ error: inout CDBus.DBusError) -> DBusError {
        defer { dbus_error_free(&error) }
        let name = error.name.map { String(cString: $0) } ?? DBusError.failedName
        let message = error.message.map { String(cString: $0) } ?? ""
        return DBusError(name: name, message: message)
    }

    private func loop(_ connection: OpaquePointer) {
        let busFD: Int32 = {
            var fd: Int32 = -1
            return dbus_connection_get_unix_fd(connection, &fd) != 0 ? fd : -1
        }()
        while true {
            let commands = state.withLock { state -> [Command] in
                defer { state.commands.removeAll() }
                return state.commands
            }
            for command in commands {
                switch command {
                case .stop:
                    // What was queued before close() still goes out (signals, replies).
                    dbus_connection_flush(connection)
                    return
                case .send(let message, let callID):
                    send(message, callID: callID, on: connection)
                }
            }
            _ = dbus_connection_read_write(connection, 0)
            while dbus_connection_dispatch(connection) == DBUS_DISPATCH_DATA_REMAINS {}
            guard dbus_connection_get_is_connected(connection) != 0 else {
                logger.warning("disconnected from the bus")
                return
            }
            if state.withLock({ !$0.commands.isEmpty }) { continue }
            var events: Int16 = Int16(POLLIN)
            if dbus_connection_has_messages_to_send(connection) != 0 { events |= Int16(POLLOUT) }
            var descriptors = [
                pollfd(fd: busFD, events: events, revents: 0),
                pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0),
            ]
            _ = poll(&descriptors, 2, expireCalls())
            if descriptors[1].revents & Int16(POLLIN) != 0 {
                var value: UInt64 = 0
                _ = read(wakeFD, &value, 8)
            }
        }
    }

    private func send(_ message: DBusMessage, callID: UInt64?, on connection: OpaquePointer) {
        let cMessage: OpaquePointer
        do {
            cMessage = try message.makeCMessage()
        } catch {
            if let callID { fail(callID: callID, with: error) }
            logger.warning("cannot encode message", metadata: ["member": "\(message.member ?? "")", "error": "\(error)"])
            return
        }
        defer { dbus_message_unref(cMessage) }
        var serial: UInt32 = 0
        guard dbus_connection_send(connection, cMessage, &serial) != 0 else {
            if let callID { fail(callID: callID, with: DBusError(name: "org.freedesktop.DBus.Error.NoMemory", message: "send failed")) }
            return
        }
        if let callID {
            state.withLock { state in
                if state.pending[callID] != nil { state.callBySerial[serial] = callID }
            }
        }
    }

    /// Every incoming message passes here, on the I/O thread.
    private func filter(_ cMessage: OpaquePointer) -> DBusHandlerResult {
        let message = DBusMessage(cMessage: cMessage)
        switch message.kind {
        case .methodReturn, .error:
            let (continuation, replyHandler) = state.withLock { state -> (CheckedContinuation<DBusMessage, any Error>?, (@Sendable ([DBusValue]) -> Void)?) in
                guard let callID = state.callBySerial.removeValue(forKey: message.replySerial) else { return (nil, nil) }
                state.deadlines[callID] = nil
                return (state.pending.removeValue(forKey: callID), state.replyHandlers.removeValue(forKey: callID))
            }
            if let replyHandler, message.kind == .methodReturn { replyHandler(message.body) }
            continuation?.resume(returning: message)
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

    private func shutDown(reason: String) {
        let (pending, subscriptions) = state.withLock { state in
            state.connected = false
            state.stopped = true
            state.commands.removeAll()
            defer {
                state.pending.removeAll()
                state.replyHandlers.removeAll()
                state.deadlines.removeAll()
                state.callBySerial.removeAll()
            }
            return (Array(state.pending.values), state.routes.removeAll())
        }
        for continuation in pending { continuation.resume(throwing: DBusError.disconnected(reason)) }
        for subscription in subscriptions { subscription.finish() }
    }
}

/// What the I/O thread needs to start; passed through `pthread_create`'s context pointer.
private final class ThreadStart: Sendable {
    let core: DBusConnectionCore
    let bus: DBusConnection.Bus
    let ready: CheckedContinuation<Void, any Error>

    init(core: DBusConnectionCore, bus: DBusConnection.Bus, ready: CheckedContinuation<Void, any Error>) {
        self.core = core
        self.bus = bus
        self.ready = ready
    }
}
