import DBus
import Logging
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

    public nonisolated let connection: DBusConnection
    private let logger: Logger
    private(set) public var objects: [DBusObjectPath: BlueZInterfaces] = [:]
    private var observers: [UInt64: AsyncStream<Event>.Continuation] = [:]
    private var nextObserver: UInt64 = 0
    private var tasks: [Task<Void, Never>] = []
    /// Events handled (for the benchmark).
    public private(set) var eventsHandled = 0

    public init(connection: DBusConnection, logger: Logger = Logger(label: "mediaroute.bluez")) {
        self.connection = connection
        self.logger = logger
    }

    /// Subscribes, then reads every object (so nothing that appears in between is missed).
    public func start() async throws(DBusError) {
        let signals = try await connection.signals(matchingAny: [
            DBusMatchRule(sender: BlueZ.busName, path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesAdded"),
            DBusMatchRule(sender: BlueZ.busName, path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesRemoved"),
            DBusMatchRule(sender: BlueZ.busName, pathNamespace: BlueZ.root, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged"),
        ])
        let owners = try await connection.nameOwnerChanges(of: BlueZ.busName)
        // The loop runs on the actor: one hop per wake-up, not one per signal.
        tasks.append(Task { await self.consume(signals) })
        tasks.append(Task { [weak self] in
            for await change in owners { await self?.ownerChanged(change) }
        })
        if try await connection.nameOwner(of: BlueZ.busName) != nil {
            try await resync()
        }
    }

    public func stop() {
        for task in tasks { task.cancel() }
        tasks.removeAll()
        for continuation in observers.values { continuation.finish() }
        observers.removeAll()
    }

    /// Changes from now on (call ``objects`` for the state so far).
    public func events() -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .unbounded)
        nextObserver += 1
        let key = nextObserver
        observers[key] = continuation
        continuation.onTermination = { [weak self] _ in Task { await self?.removeObserver(key) } }
        return stream
    }

    /// The state so far and the changes after it, with nothing lost in between.
    public func snapshotAndEvents() -> ([DBusObjectPath: BlueZInterfaces], AsyncStream<Event>) {
        (objects, events())
    }

    private func removeObserver(_ key: UInt64) { observers.removeValue(forKey: key) }

    private func publish(_ event: Event) {
        for continuation in observers.values { continuation.yield(event) }
    }

    public func properties(of path: DBusObjectPath, _ interface: String) -> [String: DBusValue]? {
        objects[path]?[interface]
    }

    /// Objects implementing `interface`, optionally below `path`.
    public func paths(implementing interface: String, below path: DBusObjectPath? = nil) -> [DBusObjectPath] {
        objects.compactMap { entry -> DBusObjectPath? in
            guard entry.value[interface] != nil else { return nil }
            if let path, !(entry.key.isDescendant(of: path) && entry.key != path) { return nil }
            return entry.key
        }.sorted()
    }

    private func consume(_ signals: AsyncStream<DBusMessage>) async {
        for await signal in signals { handle(signal) }
    }

    private func handle(_ signal: DBusMessage) {
        eventsHandled += 1
        switch signal.member {
        case "InterfacesAdded":
            guard signal.body.count == 2, let path = signal.body[0].objectPath else { return }
            let added = signal.body[1].interfaces
            objects[path, default: [:]].merge(added) { _, new in new }
            publish(.added(path, added))
        case "InterfacesRemoved":
            guard signal.body.count == 2, let path = signal.body[0].objectPath else { return }
            let names = (signal.body[1].array ?? []).compactMap(\.string)
            for name in names { objects[path]?.removeValue(forKey: name) }
            if objects[path]?.isEmpty == true { objects.removeValue(forKey: path) }
            publish(.removed(path, interfaces: names))
        case "PropertiesChanged":
            guard signal.body.count >= 2, let path = signal.path, let interface = signal.body[0].string,
                let changed = signal.body[1].dictionary?.mapValues(\.unwrapped)
            else { return }
            // Changes for an object we do not know (yet) are dropped, like BlueZ clients do.
            guard objects[path]?[interface] != nil else { return }
            objects[path]?[interface]?.merge(changed) { _, new in new }
            if signal.body.count == 3 {
                for name in (signal.body[2].array ?? []).compactMap(\.string) { objects[path]?[interface]?.removeValue(forKey: name) }
            }
            publish(.changed(path, interface: interface, changed))
        default:
            break
        }
    }

    private func ownerChanged(_ change: DBusNameOwnerChange) async {
        if change.oldOwner != nil {
            logger.warning("bluetoothd left the bus")
            let gone = objects
            objects.removeAll()
            for (path, interfaces) in gone.sorted(by: { $0.key.rawValue.count > $1.key.rawValue.count }) {
                publish(.removed(path, interfaces: Array(interfaces.keys)))
            }
            publish(.vanished)
        }
        if change.newOwner != nil {
            logger.notice("bluetoothd is on the bus: reading its objects again")
            do {
                try await resync()
                publish(.restarted)
            } catch {
                logger.error("cannot read BlueZ's objects: \(error)")
            }
        }
    }

    /// Reads every object and reports what differs from the cache.
    private func resync() async throws(DBusError) {
        let reply = try await connection.call(
            destination: BlueZ.busName, path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects")
        var fresh: [DBusObjectPath: BlueZInterfaces] = [:]
        if case .dictionary(_, _, let entries)? = reply.first {
            for entry in entries {
                guard let path = entry.key.objectPath else { continue }
                fresh[path] = entry.value.interfaces
            }
        }
        let old = objects
        objects = fresh
        for (path, interfaces) in old where fresh[path] == nil {
            publish(.removed(path, interfaces: Array(interfaces.keys)))
        }
        for (path, interfaces) in fresh.sorted(by: { $0.key.rawValue < $1.key.rawValue }) where old[path] == nil {
            publish(.added(path, interfaces))
        }
    }
}
