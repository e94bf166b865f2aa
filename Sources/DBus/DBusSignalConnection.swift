import CDBus
#if canImport(Glibc)
import Glibc
#endif
import Logging
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
/// The connection's thread is also a `TaskExecutor`: a task that consumes its
/// signals (`Task(executorPreference: connection)`) runs on that thread between
/// reads, with no thread hand-off per signal. The thread keeps the connection
/// alive: call ``close()`` when done with it.
public final class DBusSignalConnection: DBusSignalRouting, TaskExecutor {
    private struct Pending {
        let continuation: CheckedContinuation<DBusMessage, any Error>
        let replyHandler: (@Sendable ([DBusValue]) -> Void)?
        let deadline: ContinuousClock.Instant
        let what: String
    }

    private struct State {
        var routes = DBusSignalRoutes()
        /// Calls waiting for a reply, by serial.
        var pending: [UInt32: Pending] = [:]
        var jobs: [UnownedJob] = []
        var thread: pthread_t?
        var statistics = Statistics()
        var uniqueName = ""
        var stopping = false
        var ended = false
    }

    private let socket: Int32
    private let wakeFD: Int32
    private let state = Mutex(State())
    /// The next serial; taken with the write, so serials go out in order.
    private let writer = Mutex<UInt32>(1)
    private let limit: Int
    private let coalescing: Duration
    private let logger: Logger

    private init(socket: Int32, limit: Int, coalescing: Duration, logger: Logger) {
        self.socket = socket
        self.limit = limit
        self.coalescing = coalescing
        self.logger = logger
        wakeFD = mr_wake_fd()
    }

    deinit {
        Glibc.close(socket)
        Glibc.close(wakeFD)
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
        coalescing: Duration = .milliseconds(2), logger: Logger = Logger(label: "mediaroute.dbus.signals")
    ) async throws(DBusError) -> DBusSignalConnection {
        let socket = try openSocket(bus)
        let connection = DBusSignalConnection(socket: socket, limit: maximumMessageSize, coalescing: coalescing, logger: logger)
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
        if !alreadyStopping { wake() }
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
                let pending = Pending(
                    continuation: continuation, replyHandler: replyHandler, deadline: .now + timeout,
                    what: "\(member) got no reply within \(timeout)")
                var registered: UInt32?
                do throws(DBusError) {
                    try write(message) { serial in
                        let accepted = state.withLock { state -> Bool in
                            guard !state.ended, !state.stopping else { return false }
                            state.pending[serial] = pending
                            return true
                        }
                        if accepted { registered = serial }
                        return accepted
                    }
                    wake()
                } catch {
                    // Whoever takes the pending call resumes it: if the write failed because the
                    // connection ended, the thread may have failed it already.
                    if let serial = registered {
                        if state.withLock({ $0.pending.removeValue(forKey: serial) }) != nil { continuation.resume(throwing: error) }
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
        let unowned = UnownedJob(job)
        let queued = state.withLock { state -> (queued: Bool, onThread: Bool) in
            guard !state.ended else { return (false, false) }
            state.jobs.append(unowned)
            return (true, state.thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false)
        }
        if !queued.queued {
            // The thread has ended: the job still has to run somewhere.
            globalConcurrentExecutor.enqueue(ExecutorJob(unowned))
        } else if !queued.onThread {
            wake()
        }
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

    /// Authenticates, starts the thread, says `Hello`.
    private func start() async throws(DBusError) {
        let leftover = try authenticate()
        await withCheckedContinuation { (started: CheckedContinuation<Void, Never>) in
            let context = Unmanaged.passRetained(ThreadStart(connection: self, leftover: leftover, started: started)).toOpaque()
            var thread = pthread_t()
            let result = pthread_create(&thread, nil, { context in
                let start = Unmanaged<ThreadStart>.fromOpaque(context!).takeRetainedValue()
                mr_name_thread("dbus-signals")
                start.connection.state.withLock { $0.thread = pthread_self() }
                start.started.resume()
                start.connection.run(leftover: start.leftover)
                return nil
            }, context)
            if result == 0 {
                pthread_detach(thread)
            } else {
                Unmanaged<ThreadStart>.fromOpaque(context).release()
                state.withLock { $0.ended = true }
                started.resume()
            }
        }
        guard state.withLock({ $0.thread != nil }) else { throw DBusError(name: DBusError.failedName, message: "cannot start the D-Bus thread") }
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

    private func wake() {
        var one: UInt64 = 1
        _ = Glibc.write(wakeFD, &one, 8)
    }

    // MARK: The thread

    private func run(leftover: [UInt8]) {
        var buffer = ReadBuffer(initial: leftover)
        defer { buffer.deallocate() }
        let strings = DBusStringTable()
        var reason = "the connection was closed"
        var descriptors = [pollfd(fd: socket, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
        // After a read that found messages, the next one waits until then, so a
        // burst of signals is read in batches: one wake-up and warm caches for
        // several messages. The first message after a quiet spell, the rest of a
        // message that came in pieces, and replies to calls are read at once.
        var nextRead: ContinuousClock.Instant?
        loop: while true {
            runJobs()
            if state.withLock({ $0.stopping }) { break }
            let (idle, calling) = state.withLock { ($0.jobs.isEmpty, !$0.pending.isEmpty) }
            var timeout = idle ? expireCalls() : 0
            var watchSocket = true
            // A caller waits for a reply: no coalescing until it has it.
            if calling { nextRead = nil }
            if let due = nextRead {
                let now = ContinuousClock.now
                if now < due {
                    watchSocket = false
                    let wait = pollMilliseconds(until: due, from: now)
                    timeout = timeout < 0 ? wait : min(timeout, wait)
                } else {
                    nextRead = nil
                    timeout = 0
                }
            }
            descriptors[0].fd = watchSocket ? socket : -1
            descriptors[0].revents = 0
            descriptors[1].revents = 0
            if poll(&descriptors, 2, timeout) < 0 && errno != EINTR {
                reason = "poll failed: errno \(errno)"
                break
            }
            if descriptors[1].revents & Int16(POLLIN) != 0 {
                var value: UInt64 = 0
                _ = read(wakeFD, &value, 8)
            }
            guard watchSocket, descriptors[0].revents != 0 else { continue }
            switch buffer.fill(from: socket) {
            case .closed:
                reason = "the bus closed the connection"
                logger.warning("disconnected from the bus")
                break loop
            case .again:
                continue
            case .read:
                break
            }
            do {
                var messages = 0
                while let message = try buffer.nextMessage(limit: limit, strings: strings) {
                    messages += 1
                    if let (header, body) = message { try dispatch(header, body) }
                }
                state.withLock { state in
                    state.statistics.reads += 1
                    state.statistics.messages += messages
                }
                // Part of a message still to come (a large reply arrives in pieces): read on at once.
                if coalescing > .zero, messages > 0, buffer.isEmpty { nextRead = .now + coalescing }
            } catch {
                reason = "\(error)"
                logger.error("closing the signal connection: \(error)")
                break
            }
        }
        end(reason: reason)
    }

    /// Runs the jobs queued so far (`drain`: and those they queue, until none
    /// are left). One batch per turn of the loop: a task that keeps yielding
    /// cannot keep the socket from being read.
    private func runJobs(drain: Bool = false) {
        let executor = asUnownedTaskExecutor()
        repeat {
            let jobs = state.withLock { state in
                defer { state.jobs.removeAll(keepingCapacity: true) }
                return state.jobs
            }
            if jobs.isEmpty { return }
            for job in jobs { job.runSynchronously(on: executor) }
        } while drain
    }

    /// One message: header fields decoded, the body decoded only for whoever needs it.
    private func dispatch(_ header: DBusMessage, _ body: DBusWireBody) throws(DBusWireError) {
        var message = header
        switch message.kind {
        case .methodReturn, .error:
            guard let pending = state.withLock({ $0.pending.removeValue(forKey: message.replySerial) }) else { return }
            do {
                message.body = try body.values()
            } catch {
                // The stream can no longer be trusted: the connection ends (the caller learns why).
                state.withLock { $0.stopping = true }
                pending.continuation.resume(throwing: DBusError.disconnected("\(error)"))
                throw error
            }
            if message.kind == .methodReturn { pending.replyHandler?(message.body) }
            pending.continuation.resume(returning: message)
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

    /// Fails overdue calls; returns the poll timeout until the next deadline (-1: none).
    private func expireCalls() -> Int32 {
        let now = ContinuousClock.now
        let overdue = state.withLock { state -> [Pending] in
            let serials = state.pending.filter { $0.value.deadline <= now }.map(\.key)
            return serials.compactMap { state.pending.removeValue(forKey: $0) }
        }
        for pending in overdue { pending.continuation.resume(throwing: DBusError.timeout(pending.what)) }
        guard let next = state.withLock({ $0.pending.values.map(\.deadline).min() }) else { return -1 }
        return pollMilliseconds(until: next, from: now)
    }

    private func end(reason: String) {
        shutdown(socket, Int32(SHUT_RDWR))
        let (pending, subscriptions) = state.withLock { state in
            state.ended = true
            defer { state.pending.removeAll() }
            return (Array(state.pending.values), state.routes.removeAll())
        }
        for call in pending { call.continuation.resume(throwing: DBusError.disconnected(reason)) }
        for subscription in subscriptions { subscription.finish() }
        // Tasks that prefer this executor may still have work queued.
        runJobs(drain: true)
    }
}

/// Whole milliseconds from `now` until `instant`, rounded up: a `poll(2)` timeout.
func pollMilliseconds(until instant: ContinuousClock.Instant, from now: ContinuousClock.Instant) -> Int32 {
    let (seconds, attoseconds) = (instant - now).components
    return Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
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

/// What the thread needs to start; passed through `pthread_create`'s context pointer.
private final class ThreadStart: Sendable {
    let connection: DBusSignalConnection
    let leftover: [UInt8]
    let started: CheckedContinuation<Void, Never>

    init(connection: DBusSignalConnection, leftover: [UInt8], started: CheckedContinuation<Void, Never>) {
        self.connection = connection
        self.leftover = leftover
        self.started = started
    }
}
