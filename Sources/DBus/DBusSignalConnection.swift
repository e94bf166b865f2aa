import CDBus
#if canImport(Glibc)
import Glibc
#endif
public import IOReactor
public import Logging
import Synchronization

/// A second connection to a bus for one heavy signal stream (BlueZ's object
/// manager), whose incoming messages MediaRoute reads with ``DBusWireReader``
/// rather than through libdbus.
///
/// Why: with 1 000 devices appearing, libdbus's receive path (its loader's
/// validation, dispatch and iterators) cost ~24 µs per `InterfacesAdded` here,
/// three times what reading the socket did, more than issue 5's whole budget
/// per device. libdbus still does everything else: it parses the bus address
/// and marshals every message this connection sends. Only the unix socket
/// transport and the `EXTERNAL` authentication are supported (what the system
/// bus uses); anything else is a ``DBusError`` and callers fall back to a
/// ``DBusConnection``. No file descriptors are passed on it.
///
/// The socket is watched by the process's ``IOReactor``, and the connection is a
/// `TaskExecutor` on the reactor's thread: a task that consumes its signals
/// (`Task(executorPreference: connection)`) runs there between reads, with no thread
/// hand-off per signal. The watch keeps the connection alive: call ``close()`` when
/// done with it.
public final class DBusSignalConnection: DBusSignalRouting, TaskExecutor {
    private struct State {
        var routes = DBusSignalRoutes()
        var watch: IOWatch?
        var statistics = Statistics()
        var uniqueName = ""
        var stopping = false
        var ended = false
    }

    /// What only the reactor thread touches: the bytes read and not yet taken as messages.
    private struct Reading {
        var buffer: ReadBuffer
        let strings = DBusStringTable()
        /// Reads are held back until this timer fires (a burst is read in batches).
        var heldBack: IOTimer?
    }

    private let socket: Int32
    private let reactor: IOReactor
    private let state = Mutex(State())
    private let reading = Mutex(Reading(buffer: ReadBuffer(initial: [])))
    /// Calls waiting for a reply, by serial.
    private let pending: DBusPendingCalls
    /// The next serial; taken with the write, so serials go out in order.
    private let writer = Mutex<UInt32>(1)
    private let limit: Int
    private let coalescing: Duration
    private let logger: Logger

    private init(socket: Int32, reactor: IOReactor, limit: Int, coalescing: Duration, logger: Logger) {
        self.socket = socket
        self.reactor = reactor
        self.limit = limit
        self.coalescing = coalescing
        self.logger = logger
        pending = DBusPendingCalls(reactor: reactor)
    }

    deinit {
        reading.withLock { $0.buffer.deallocate() }
        Glibc.close(socket)
    }

    /// What the connection has read so far.
    public struct Statistics: Sendable, Hashable {
        /// Reads from the socket that returned bytes.
        public var reads = 0
        /// Messages decoded from them.
        public var messages = 0
    }

    /// What the connection has read so far (a burst read in batches shows fewer reads than messages).
    public var statistics: Statistics { state.withLock { $0.statistics } }

    /// This connection's unique name on the bus.
    public var uniqueName: String { state.withLock { $0.uniqueName } }

    /// Whether the connection is still open.
    public var isConnected: Bool { state.withLock { !$0.ended && !$0.stopping } }

    /// Connects to `bus` and registers (`Hello`).
    /// - Parameters:
    ///   - maximumMessageSize: larger incoming messages end the connection.
    ///   - coalescing: while messages keep coming, the socket is read at most
    ///     this often (everything waiting is read each time); the first message
    ///     after a quiet spell is read at once. Zero reads every message as it comes.
    /// - Throws: ``DBusError`` when the bus cannot be reached or its address is not a unix socket.
    public static func connect(
        to bus: DBusConnection.Bus, maximumMessageSize: Int = DBusWireReader.maximumMessageSize,
        coalescing: Duration = .milliseconds(2), reactor: IOReactor = .shared, logger: Logger = Logger(label: "mediaroute.dbus.signals")
    ) async throws(DBusError) -> DBusSignalConnection {
        let socket = try openSocket(bus)
        let connection = DBusSignalConnection(socket: socket, reactor: reactor, limit: maximumMessageSize, coalescing: coalescing, logger: logger)
        do {
            try await connection.start()
        } catch {
            connection.close()
            throw error
        }
        return connection
    }

    /// Closes the connection: pending calls fail with `Disconnected`, subscriptions finish.
    public func close() {
        let alreadyStopping = state.withLock { state in
            defer { state.stopping = true }
            return state.stopping
        }
        if !alreadyStopping { reactor.execute { self.end(reason: "the connection was closed") } }
    }

    // MARK: DBusSignalSource

    public func handleSignals(
        matchingAny rules: [DBusMatchRule], finished: @escaping @Sendable () -> Void = {},
        _ handler: @escaping @Sendable (DBusMessage) -> Void
    ) async throws(DBusError) -> DBusSignalSubscription {
        try await subscribe(matchingAny: rules, finished: finished, delivery: .decoded(handler))
    }

    /// Like ``handleSignals(matchingAny:finished:_:)``, but `handler` gets the
    /// header fields (`body` empty) and the body still on the wire, valid during
    /// the call: a consumer that knows the signature reads it straight into its
    /// own types (``DBusWireBody/read(_:)``) instead of a `DBusValue` tree. An
    /// error it throws (a malformed body) ends the connection, as any malformed
    /// message does. Rules on arguments (`arg0`) are not supported here.
    public func handleRawSignals(
        matchingAny rules: [DBusMatchRule], finished: @escaping @Sendable () -> Void = {},
        _ handler: @escaping @Sendable (DBusMessage, DBusWireBody) throws(DBusWireError) -> Void
    ) async throws(DBusError) -> DBusSignalSubscription {
        guard rules.allSatisfy({ $0.arg0 == nil }) else { throw DBusError.invalidArgs("raw signal handlers cannot match on arguments") }
        return try await subscribe(matchingAny: rules, finished: finished, delivery: .raw(handler))
    }

    public func call(
        destination: String?, path: DBusObjectPath, interface: String?, member: String,
        _ arguments: [DBusValue] = [], timeout: Duration = DBusConnection.defaultTimeout,
        replyHandler: (@Sendable ([DBusValue]) -> Void)? = nil
    ) async throws(DBusError) -> [DBusValue] {
        let message = DBusMessage.methodCall(destination: destination, path: path, interface: interface, member: member, body: arguments)
        let reply: DBusMessage
        do {
            reply = try await withCheckedThrowingContinuation { continuation in
                var registered: UInt32?
                do throws(DBusError) {
                    try write(message) { serial in
                        guard !state.withLock({ $0.ended || $0.stopping }),
                            pending.add(serial, continuation, replyHandler: replyHandler, timeout: timeout, what: "\(member) got no reply within \(timeout)")
                        else { return false }
                        registered = serial
                        return true
                    }
                    // A caller waits: its reply is read at once, not after a held-back batch.
                    state.withLock { $0.watch }?.setInterest(.readable)
                } catch {
                    // Whoever takes the pending call resumes it: if the write failed because the
                    // connection ended, the reactor may have failed it already.
                    if let serial = registered {
                        pending.take(serial)?.continuation.resume(throwing: error)
                    } else {
                        continuation.resume(throwing: error)
                    }
                }
            }
        } catch let error as DBusError {
            throw error
        } catch {
            throw DBusError(name: DBusError.failedName, message: "\(error)")
        }
        if let error = reply.error { throw error }
        return reply.body
    }

    public func nameOwner(of name: String) async throws(DBusError) -> String? {
        try await lookUpOwner(of: name)
    }

    func send(_ message: DBusMessage) {
        do {
            try write(message) { _ in !self.state.withLock { $0.ended } }
        } catch {
            logger.debug("cannot send \(message.member ?? "message"): \(error)")
        }
    }

    func withRoutes<T>(_ body: (inout DBusSignalRoutes, _ open: Bool) -> T) -> T {
        state.withLock { body(&$0.routes, !$0.ended) }
    }

    // MARK: TaskExecutor

    public func enqueue(_ job: consuming ExecutorJob) {
        reactor.enqueue(job)
    }

    // MARK: Connecting

    /// A connected, authenticated socket for the bus's first unix-socket address.
    private static func openSocket(_ bus: DBusConnection.Bus) throws(DBusError) -> Int32 {
        let address: String
        switch bus {
        case .system:
            address = getenv("DBUS_SYSTEM_BUS_ADDRESS").map { String(cString: $0) } ?? "unix:path=/var/run/dbus/system_bus_socket"
        case .session:
            guard let value = getenv("DBUS_SESSION_BUS_ADDRESS") else { throw DBusError(name: DBusError.failedName, message: "no session bus address") }
            address = String(cString: value)
        case .address(let value):
            address = value
        }
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        var entries: UnsafeMutablePointer<OpaquePointer?>?
        var count: Int32 = 0
        guard dbus_parse_address(address, &entries, &count, &error) != 0, let entries else {
            defer { dbus_error_free(&error) }
            throw DBusError(name: DBusError.failedName, message: error.message.map { String(cString: $0) } ?? "bad address \(address)")
        }
        defer { dbus_address_entries_free(entries) }
        for index in 0..<Int(count) {
            guard let entry = entries[index], dbus_address_entry_get_method(entry).map({ String(cString: $0) }) == "unix" else { continue }
            if let path = dbus_address_entry_get_value(entry, "path") {
                return try connectUnix(String(cString: path), abstract: false)
            }
            if let name = dbus_address_entry_get_value(entry, "abstract") {
                return try connectUnix(String(cString: name), abstract: true)
            }
        }
        throw DBusError(name: DBusError.failedName, message: "no unix socket in \(address)")
    }

    private static func connectUnix(_ path: String, abstract: Bool) throws(DBusError) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        // An abstract name starts with a NUL and has none at the end; a path ends with one.
        let bytes = abstract ? [0] + Array(path.utf8) : Array(path.utf8) + [0]
        guard bytes.count <= MemoryLayout.size(ofValue: address.sun_path) else {
            throw DBusError(name: DBusError.failedName, message: "socket path too long")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw DBusError(name: DBusError.failedName, message: "socket: errno \(errno)") }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) }
        }
        guard connected == 0 else {
            let code = errno
            Glibc.close(fd)
            throw DBusError(name: "org.freedesktop.DBus.Error.NoServer", message: "cannot connect to \(path): errno \(code)")
        }
        return fd
    }

    /// Authenticates, has the reactor watch the socket, says `Hello`.
    private func start() async throws(DBusError) {
        let leftover = try authenticate()
        reading.withLock { $0.buffer = ReadBuffer(initial: leftover) }
        do {
            let watch = try reactor.watch(socket, for: .readable) { _ in self.readAvailable() }
            state.withLock { $0.watch = watch }
        } catch {
            throw DBusError(name: DBusError.failedName, message: "cannot watch the bus socket: \(error)")
        }
        // What came with the authentication's answer may hold whole messages already.
        if !leftover.isEmpty { reactor.execute { self.takeMessages() } }
        let hello = try await call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "Hello")
        state.withLock { $0.uniqueName = hello.first?.string ?? "" }
    }

    /// SASL `EXTERNAL` with our uid, as the bus daemon expects on a unix socket;
    /// returns what the bus sent after its `OK` line (nothing, normally).
    private func authenticate() throws(DBusError) -> [UInt8] {
        // This runs on the caller's thread: a bus that does not answer may hold it 5 s, not forever.
        var limit = timeval(tv_sec: 5, tv_usec: 0)
        _ = setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        defer {
            var none = timeval(tv_sec: 0, tv_usec: 0)
            _ = setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &none, socklen_t(MemoryLayout<timeval>.size))
        }
        let uid = String(getuid())
        let hexUID = uid.utf8.map { String($0, radix: 16) }.joined()
        try writeAll(Array("\0AUTH EXTERNAL \(hexUID)\r\n".utf8))
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 512)
        while true {
            if let end = received.indices.dropLast().first(where: { received[$0] == 0x0D && received[$0 + 1] == 0x0A }) {
                let line = String(decoding: received[..<end], as: UTF8.self)
                guard line.hasPrefix("OK ") else { throw DBusError(name: DBusError.accessDeniedName, message: "the bus refused EXTERNAL authentication: \(line)") }
                try writeAll(Array("BEGIN\r\n".utf8))
                return Array(received[(end + 2)...])
            }
            guard received.count < 4096 else { throw DBusError(name: DBusError.failedName, message: "the bus's authentication reply is too long") }
            let count = read(socket, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { throw DBusError.timeout("the bus did not answer authentication within 5 s") }
            guard count > 0 else { throw DBusError.disconnected("the bus closed the connection while authenticating") }
            received += chunk[..<count]
        }
    }

    private func writeAll(_ bytes: [UInt8]) throws(DBusError) {
        try bytes.withUnsafeBytes { raw in Result { () throws(DBusError) in try writeAll(raw) } }.get()
    }

    private func writeAll(_ bytes: UnsafeRawBufferPointer) throws(DBusError) {
        var written = 0
        while written < bytes.count {
            let count = Glibc.send(socket, bytes.baseAddress! + written, bytes.count - written, Int32(MSG_NOSIGNAL))
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw DBusError.disconnected("cannot write to the bus: errno \(errno)") }
            written += count
        }
    }

    /// Marshals `message` with libdbus and writes it; `register` sees its serial
    /// first (a reply can arrive before the write returns) and may refuse.
    private func write(_ message: DBusMessage, register: (UInt32) -> Bool) throws(DBusError) {
        try writer.withLock { (serial: inout UInt32) throws(DBusError) in
            let bytes = try message.marshalled(serial: serial)
            guard register(serial) else { throw DBusError.disconnected("the connection is closed") }
            serial = serial == UInt32.max ? 1 : serial + 1
            try writeAll(bytes)
        }
    }

    // MARK: Reading, on the reactor thread

    /// The socket is readable: one read of what it has, then the whole messages in it.
    private func readAvailable() {
        guard !state.withLock({ $0.ended }) else { return }
        switch reading.withLock({ $0.buffer.fill(from: socket) }) {
        case .closed:
            logger.warning("disconnected from the bus")
            end(reason: "the bus closed the connection")
        case .again:
            return
        case .read:
            takeMessages()
        }
    }

    /// Dispatches every whole message read so far. After a read that found messages,
    /// the next one waits `coalescing`, so a burst of signals is read in batches: one
    /// wake-up and warm caches for several messages. The first message after a quiet
    /// spell, the rest of a message that came in pieces, and replies to calls are read
    /// at once.
    private func takeMessages() {
        do {
            var messages = 0
            while let message = try reading.withLock({ reading in try reading.buffer.nextMessage(limit: limit, strings: reading.strings) }) {
                messages += 1
                if let (header, body) = message { try dispatch(header, body) }
                if state.withLock({ $0.ended }) { return }
            }
            state.withLock { state in
                state.statistics.reads += 1
                state.statistics.messages += messages
            }
            if coalescing > .zero, messages > 0, reading.withLock({ $0.buffer.isEmpty }), pending.isEmpty { holdBackReads() }
        } catch {
            logger.error("closing the signal connection: \(error)")
            end(reason: "\(error)")
        }
    }

    private func holdBackReads() {
        guard let watch = state.withLock({ $0.watch }) else { return }
        watch.setInterest([])
        let timer = reactor.schedule(at: reactor.now + coalescing) { watch.setInterest(.readable) }
        reading.withLock { $0.heldBack = timer }
    }

    /// One message: header fields decoded, the body decoded only for whoever needs it.
    private func dispatch(_ header: DBusMessage, _ body: DBusWireBody) throws(DBusWireError) {
        var message = header
        switch message.kind {
        case .methodReturn, .error:
            guard let call = pending.take(message.replySerial) else { return }
            do {
                message.body = try body.values()
            } catch {
                // The stream can no longer be trusted: the connection ends (the caller learns why).
                state.withLock { $0.stopping = true }
                call.continuation.resume(throwing: DBusError.disconnected("\(error)"))
                throw error
            }
            if message.kind == .methodReturn { call.replyHandler?(message.body) }
            call.continuation.resume(returning: message)
        case .signal:
            // The bus's own signals (owner changes) and rules on arguments need the body to be routed.
            var decoded = false
            var deliveries = state.withLock { $0.routes.deliveries(for: message, bodyDecoded: false) }
            if deliveries == nil {
                message.body = try body.values()
                decoded = true
                deliveries = state.withLock { $0.routes.deliveries(for: message, bodyDecoded: true) }
            }
            for delivery in deliveries ?? DBusSignalRoutes.Deliveries() {
                switch delivery {
                case .raw(let handler):
                    try handler(message, body)
                case .decoded(let handler):
                    if !decoded {
                        message.body = try body.values()
                        decoded = true
                    }
                    handler(message)
                }
            }
        case .methodCall:
            // Nothing is exported here; answer so a caller does not wait (libdbus answers Peer.Ping itself).
            guard !message.noReplyExpected else { return }
            var reply = message.interface == "org.freedesktop.DBus.Peer" && message.member == "Ping"
                ? message.reply([])
                : message.errorReply(DBusError(name: DBusError.unknownMethodName, message: "no objects on this connection"))
            reply.destination = message.sender
            send(reply)
        }
    }

    /// Ends the connection (on the reactor thread): calls fail, subscriptions finish,
    /// the socket is no longer watched (it is closed when the connection goes).
    private func end(reason: String) {
        let (watch, subscriptions) = state.withLock { state -> (IOWatch?, [DBusSignalRoutes.Subscription]) in
            guard !state.ended else { return (nil, []) }
            state.ended = true
            state.stopping = true
            defer { state.watch = nil }
            return (state.watch, state.routes.removeAll())
        }
        guard let watch else { return }
        watch.cancel()
        reading.withLock { _ = $0.heldBack?.cancel() }
        shutdown(socket, Int32(SHUT_RDWR))
        pending.close(failingWith: DBusError.disconnected(reason))
        for subscription in subscriptions { subscription.finish() }
    }
}

/// Bytes read from the socket and not yet taken as messages.
private struct ReadBuffer {
    enum FillResult { case read, again, closed }

    private var storage: UnsafeMutableRawBufferPointer
    private var start = 0
    private var count = 0

    init(initial: [UInt8]) {
        storage = .allocate(byteCount: max(65_536, initial.count), alignment: 8)
        storage.copyBytes(from: initial)
        count = initial.count
    }

    func deallocate() { storage.deallocate() }

    /// Whether every byte read has been taken as a message.
    var isEmpty: Bool { start == count }

    /// One read of whatever the socket has.
    mutating func fill(from socket: Int32) -> FillResult {
        if start > 0 {
            if count > start { storage.baseAddress!.copyMemory(from: storage.baseAddress! + start, byteCount: count - start) }
            count -= start
            start = 0
        }
        if count == storage.count { grow(to: storage.count * 2) }
        let read = recv(socket, storage.baseAddress! + count, storage.count - count, Int32(MSG_DONTWAIT))
        if read < 0 { return errno == EAGAIN || errno == EINTR ? .again : .closed }
        if read == 0 { return .closed }
        count += read
        return .read
    }

    private mutating func grow(to size: Int) {
        let larger = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 8)
        larger.baseAddress!.copyMemory(from: storage.baseAddress! + start, byteCount: count - start)
        count -= start
        start = 0
        storage.deallocate()
        storage = larger
    }

    /// The next whole message: nil when more bytes are needed, `.some(nil)` for
    /// one of a type nobody knows (skipped).
    mutating func nextMessage(limit: Int, strings: DBusStringTable) throws(DBusWireError) -> (DBusMessage, DBusWireBody)?? {
        guard count - start >= 16 else { return nil }
        let length = try DBusWireReader.messageLength(fixedHeader: UnsafeRawBufferPointer(rebasing: storage[start..<(start + 16)]), limit: limit)
        guard count - start >= length else {
            if length > storage.count { grow(to: max(length, storage.count * 2)) }
            return nil
        }
        let message = try DBusWireReader.decodeHeader(UnsafeRawBufferPointer(rebasing: storage[start..<(start + length)]), limit: limit, strings: strings)
        start += length
        return .some(message)
    }
}
