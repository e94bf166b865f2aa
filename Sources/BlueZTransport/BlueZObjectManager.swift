public import DBus
import EventBroadcast
public import Logging
import Synchronization

/// One object manager per bus for `org.bluez`: `GetManagedObjects` once, then
/// `InterfacesAdded`/`InterfacesRemoved`/`PropertiesChanged` into a property
/// cache. Signals are taken only from the current owner of `org.bluez`; when
/// BlueZ restarts (a new owner), everything is read again and the differences
/// are reported, followed by ``Event/restarted``.
public actor BlueZObjectManager {
    public enum Event: Sendable {
        case added(DBusObjectPath, BlueZInterfaces)
        case removed(DBusObjectPath, interfaces: [String])
        case changed(DBusObjectPath, interface: String, [String: DBusValue])
        /// BlueZ left the bus; every object was reported removed.
        case vanished
        /// BlueZ is back (or new); the cache was rebuilt and the differences reported.
        case restarted
    }

    /// A synchronous observer: called with each event and the cache after it,
    /// on the reactor thread, with the cache locked. It must return quickly
    /// and must not call back into the manager.
    public typealias Handler = @Sendable (Event, _ objects: [DBusObjectPath: BlueZInterfaces]) -> Void

    fileprivate enum Observer {
        case stream(AsyncStream<Event>.Continuation)
        case handler(Handler)
    }

    /// The cache and its observers. Signals update it on the reactor thread as
    /// they arrive (no hand-off per signal: a burst of 1 000 devices costs one
    /// wake-up per device, not four); the actor's own work (resync) takes the same lock.
    fileprivate struct State {
        var objects: [DBusObjectPath: BlueZInterfaces] = [:]
        var observers = ObserverTable<Observer>()
        var eventsHandled = 0
        /// The connection the stream is read on, when it is not ``connection``.
        var signalConnection: DBusSignalConnection?

        func publish(_ event: Event) {
            for observer in observers.all {
                switch observer {
                case .stream(let continuation): continuation.yield(event)
                case .handler(let handler): handler(event, objects)
                }
            }
        }
    }

    /// The connection for calls to BlueZ (and, with `ownSignalConnection` off, for its signals).
    public nonisolated let connection: DBusConnection
    private let ownSignalConnection: Bool
    private let signalCoalescing: Duration
    private let logger: Logger
    private nonisolated let state = SharedState()
    private var subscriptions: [DBusSignalSubscription] = []
    private var stopped = false
    /// Where the object-manager stream is read: a ``DBusSignalConnection`` of
    /// our own, or ``connection`` when that cannot be opened.
    private var source: (any DBusSignalSource)?

    /// The thread that reads BlueZ's signals, as an executor: a task consuming
    /// events or discovery that prefers it (`Task(executorPreference:)`) runs
    /// between reads, with no thread hand-off per event. Nil before ``start()``
    /// or when the stream is read on ``connection``.
    public nonisolated var signalExecutor: (any TaskExecutor)? { state.withLock { $0.signalConnection } }

    /// Every object BlueZ has, by path.
    public var objects: [DBusObjectPath: BlueZInterfaces] { state.withLock { $0.objects } }

    /// Signals handled (for the benchmark).
    public var eventsHandled: Int { state.withLock { $0.eventsHandled } }

    /// - Parameters:
    ///   - ownSignalConnection: read BlueZ's signals on a second connection with
    ///     MediaRoute's own message reader (``DBusSignalConnection``: a third of
    ///     libdbus's cost per signal); off, they are read on `connection`.
    ///   - signalCoalescing: on that connection, while signals keep coming (a
    ///     scan finding hundreds of devices), they are read at most this often,
    ///     all at once; the first after a quiet spell is read at once. The
    ///     default trades up to 10 ms of latency in a burst for a third less CPU
    ///     per device (Docs/benchmarks.md).
    public init(
        connection: DBusConnection, ownSignalConnection: Bool = true, signalCoalescing: Duration = .milliseconds(10),
        logger: Logger = Logger(label: "mediaroute.bluez")
    ) {
        self.connection = connection
        self.ownSignalConnection = ownSignalConnection
        self.signalCoalescing = signalCoalescing
        self.logger = logger
    }

    deinit {
        state.withLock { $0.signalConnection }?.close()
    }

    /// Subscribes, then reads every object (so nothing that appears in between is missed).
    ///
    /// Signals, `org.bluez`'s owner changes and `GetManagedObjects` replies all
    /// reach the cache on the reactor thread in the order they arrived, so a
    /// full read never undoes a signal sent after it.
    public func start() async throws(DBusError) {
        stopped = false
        let source = await openSource()
        self.source = source
        try await subscribe(on: source)
        if try await source.nameOwner(of: BlueZ.busName) != nil {
            try await resync()
        }
    }

    private func subscribe(on source: any DBusSignalSource) async throws(DBusError) {
        let logger = logger
        // The own connection ending while we run (a malformed message, the bus going) must not
        // leave the cache silently stale.
        let ended: @Sendable () -> Void = { [weak self] in Task { await self?.signalConnectionEnded() } }
        let added = DBusMatchRule(sender: BlueZ.busName, path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesAdded")
        var rules = [
            DBusMatchRule(sender: BlueZ.busName, path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesRemoved"),
            DBusMatchRule(sender: BlueZ.busName, pathNamespace: BlueZ.root, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged"),
            DBusNameOwnerChange.matchRule(for: BlueZ.busName),
        ]
        if let own = source as? DBusSignalConnection {
            // The hot signal, read straight into the cache's types (one on the same
            // connection as the rest, so everything still applies in arrival order).
            subscriptions.append(try await own.handleRawSignals(matchingAny: [added], finished: ended) { [state] header, body throws(DBusWireError) in
                guard body.hasSignature("oa{sa{sv}}") else {
                    var message = header
                    message.body = try body.values()
                    state.withLock { Self.handle(message, &$0) }
                    return
                }
                let (path, interfaces) = try body.read { reader throws(DBusWireError) in try Self.readInterfacesAdded(&reader) }
                state.withLock { Self.add(interfaces, at: path, &$0) }
            })
        } else {
            rules.insert(added, at: 0)
        }
        var finished: @Sendable () -> Void = {}
        if source is DBusSignalConnection { finished = ended }
        subscriptions.append(try await source.handleSignals(matchingAny: rules, finished: finished) { [weak self, state] signal in
            guard let change = DBusNameOwnerChange(signal) else {
                state.withLock { Self.handle(signal, &$0) }
                return
            }
            if change.oldOwner != nil {
                logger.warning("bluetoothd left the bus")
                state.withLock { Self.vanish(&$0) }
            }
            if change.newOwner != nil {
                Task { await self?.restarted() }
            }
        })
    }

    /// The own signal connection ended while running: read on the shared one from
    /// now on, and read everything again (what came in between is not lost).
    private func signalConnectionEnded() async {
        guard !stopped, let own = source as? DBusSignalConnection else { return }
        logger.error("the connection reading BlueZ's signals ended; reading them on the shared connection")
        for subscription in subscriptions { subscription.cancel() }
        subscriptions.removeAll()
        own.close()
        state.withLock { $0.signalConnection = nil }
        source = connection
        do {
            try await subscribe(on: connection)
            if try await connection.nameOwner(of: BlueZ.busName) != nil { try await resync() }
        } catch {
            logger.error("cannot read BlueZ's signals on the shared connection either: \(error)")
        }
    }

    private func openSource() async -> any DBusSignalSource {
        guard ownSignalConnection else { return connection }
        do {
            let own = try await DBusSignalConnection.connect(to: connection.bus, coalescing: signalCoalescing, logger: logger)
            state.withLock { $0.signalConnection = own }
            return own
        } catch {
            logger.notice("reading BlueZ's signals on the shared connection: \(error)")
            return connection
        }
    }

    /// Returns once every signal BlueZ sent before now is in the cache: a
    /// `Peer.Ping` to BlueZ on the signals' connection, whose reply comes after
    /// them. Call it after a call on ``connection`` whose effects (`Paired`,
    /// `Connected`) are signalled on the other connection and read from the
    /// cache next; on one connection it returns at once.
    public func synchronize() async {
        guard let source, source !== connection else { return }
        do {
            _ = try await source.call(
                destination: BlueZ.busName, path: "/", interface: "org.freedesktop.DBus.Peer", member: "Ping", [],
                timeout: .seconds(5), replyHandler: nil)
        } catch {
            logger.debug("BlueZ did not answer a ping: \(error)")
        }
    }

    public func stop() {
        stopped = true
        for subscription in subscriptions { subscription.cancel() }
        subscriptions.removeAll()
        state.withLock { state in defer { state.signalConnection = nil }; return state.signalConnection }?.close()
        source = nil
        for case .stream(let continuation) in state.withLock({ $0.observers.removeAll() }) { continuation.finish() }
    }

    /// Changes from now on (call ``objects`` for the state so far).
    public func events() -> AsyncStream<Event> {
        snapshotAndEvents().1
    }

    /// The state so far and the changes after it, with nothing lost in between.
    public func snapshotAndEvents() -> ([DBusObjectPath: BlueZInterfaces], AsyncStream<Event>) {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .unbounded)
        let (key, objects) = addObserver(.stream(continuation))
        // Not here and now: the runtime calls this with the cancelled task's status locked, and
        // `publish` resumes waiting tasks with our lock held; taking our lock here could deadlock.
        continuation.onTermination = { [state] _ in Task { _ = state.withLock { $0.observers.remove(key) } } }
        return (objects, stream)
    }

    /// The state so far, and `handler` called synchronously for every change
    /// after it (see ``Handler``) until the observation is cancelled. Cancel it
    /// from task code, not from a cancellation or termination handler (those run
    /// with a task's status locked, while `handler` may be resuming that task).
    public nonisolated func snapshotAndObserve(_ handler: @escaping Handler) -> ([DBusObjectPath: BlueZInterfaces], BlueZObservation) {
        let (key, objects) = addObserver(.handler(handler))
        return (objects, BlueZObservation { [state] in _ = state.withLock { $0.observers.remove(key) } })
    }

    private nonisolated func addObserver(_ observer: Observer) -> (UInt64, [DBusObjectPath: BlueZInterfaces]) {
        state.withLock { state in (state.observers.add(observer), state.objects) }
    }

    public func properties(of path: DBusObjectPath, _ interface: String) -> BlueZProperties? {
        state.withLock { $0.objects[path]?[interface] }
    }

    /// Objects implementing `interface`, optionally below `path`.
    public func paths(implementing interface: String, below path: DBusObjectPath? = nil) -> [DBusObjectPath] {
        state.withLock { state in
            state.objects.compactMap { entry -> DBusObjectPath? in
                guard entry.value[interface] != nil else { return nil }
                if let path, !(entry.key.isDescendant(of: path) && entry.key != path) { return nil }
                return entry.key
            }
        }.sorted()
    }

    /// One signal into the cache, then to the observers; on the reactor thread, lock held.
    /// `oa{sa{sv}}` read value by value into the cache's types: no `DBusValue`
    /// tree to build, convert and free for each device.
    package static func readInterfacesAdded(_ reader: inout DBusBodyReader) throws(DBusWireError) -> (DBusObjectPath, BlueZInterfaces) {
        let path = try reader.objectPath()
        var interfaces = BlueZInterfaces()
        try reader.dictionary { reader throws(DBusWireError) in
            let name = try reader.string()
            var entries: [BlueZProperties.Entry] = []
            entries.reserveCapacity(24)  // a device has 10 to 22: one allocation, not five
            try reader.dictionary { reader throws(DBusWireError) in
                let property = try reader.string()
                entries.append(BlueZProperties.Entry(name: property, kept: try reader.variantKeepingContainers()))
            }
            interfaces[name] = BlueZProperties(entries: entries)
        }
        return (path, interfaces)
    }

    private static func add(_ added: BlueZInterfaces, at path: DBusObjectPath, _ state: inout State) {
        state.eventsHandled += 1
        // One lookup for a new object, the usual case.
        if var known = state.objects.updateValue(added, forKey: path) {
            known.merge(added) { _, new in new }
            state.objects[path] = known
        }
        state.publish(.added(path, added))
    }

    private static func handle(_ signal: DBusMessage, _ state: inout State) {
        if signal.member != "InterfacesAdded" { state.eventsHandled += 1 }
        switch signal.member {
        case "InterfacesAdded":
            guard signal.body.count == 2, let path = signal.body[0].objectPath else { return }
            add(signal.body[1].interfaces, at: path, &state)
        case "InterfacesRemoved":
            guard signal.body.count == 2, let path = signal.body[0].objectPath else { return }
            let names = (signal.body[1].array ?? []).compactMap(\.string)
            for name in names { state.objects[path]?.removeValue(forKey: name) }
            if state.objects[path]?.isEmpty == true { state.objects.removeValue(forKey: path) }
            state.publish(.removed(path, interfaces: names))
        case "PropertiesChanged":
            guard signal.body.count >= 2, let path = signal.path, let interface = signal.body[0].string,
                let changed = signal.body[1].dictionary?.mapValues(\.unwrapped)
            else { return }
            // Changes for an object we do not know (yet) are dropped, like BlueZ clients do.
            guard state.objects[path]?[interface] != nil else { return }
            state.objects[path]?[interface]?.merge(changed)
            if signal.body.count == 3 {
                for name in (signal.body[2].array ?? []).compactMap(\.string) { state.objects[path]?[interface]?.removeValue(forKey: name) }
            }
            state.publish(.changed(path, interface: interface, changed))
        default:
            break
        }
    }

    /// BlueZ left: every object is reported removed (deepest first), then ``Event/vanished``.
    private static func vanish(_ state: inout State) {
        let gone = state.objects
        state.objects.removeAll()
        for (path, interfaces) in gone.sorted(by: { $0.key.rawValue.count > $1.key.rawValue.count }) {
            state.publish(.removed(path, interfaces: Array(interfaces.keys)))
        }
        state.publish(.vanished)
    }

    private func restarted() async {
        logger.notice("bluetoothd is on the bus: reading its objects again")
        do {
            try await resync()
            state.withLock { $0.publish(.restarted) }
        } catch {
            logger.error("cannot read BlueZ's objects: \(error)")
        }
    }

    /// Reads every object; the reply replaces the cache (on the reactor thread, in
    /// order with the signals) and what differs is reported.
    private func resync() async throws(DBusError) {
        guard let source else { return }
        _ = try await source.call(
            destination: BlueZ.busName, path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects", [],
            timeout: DBusConnection.defaultTimeout, replyHandler: { [state] body in state.withLock { Self.replace(with: body, &$0) } })
    }

    private static func replace(with reply: [DBusValue], _ state: inout State) {
        var fresh: [DBusObjectPath: BlueZInterfaces] = [:]
        if case .dictionary(_, _, let entries)? = reply.first {
            for entry in entries {
                guard let path = entry.key.objectPath else { continue }
                fresh[path] = entry.value.interfaces
            }
        }
        let old = state.objects
        state.objects = fresh
        for (path, interfaces) in old where fresh[path] == nil {
            state.publish(.removed(path, interfaces: Array(interfaces.keys)))
        }
        for (path, interfaces) in fresh.sorted(by: { $0.key.rawValue < $1.key.rawValue }) where old[path] == nil {
            state.publish(.added(path, interfaces))
        }
    }
}

/// A ``BlueZObjectManager/snapshotAndObserve(_:)`` observation: ``DBusSignalSubscription/cancel()``
/// (or releasing it) stops the handler.
public typealias BlueZObservation = DBusSignalSubscription

/// The manager's state in a reference, so the signal handler and observations can hold it.
private final class SharedState: Sendable {
    let lock: Mutex<BlueZObjectManager.State>

    init() {
        lock = Mutex(BlueZObjectManager.State())
    }

    func withLock<T>(_ body: (inout BlueZObjectManager.State) -> T) -> T {
        lock.withLock { body(&$0) }
    }
}
