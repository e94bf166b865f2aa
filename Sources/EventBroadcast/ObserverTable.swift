/// Observers by the token each got when it was added: the bookkeeping of every fan-out
/// in the package. ``EventBroadcaster`` keeps its streams in one; a fan-out that cannot
/// be an `AsyncStream` keeps its own table inside the state it already guards (the BlueZ
/// cache calls its observers under the cache's lock, inside the per-device budget; the
/// loopback transport's discovery streams are `DiscoveryEvents`).
public struct ObserverTable<Observer> {
    private var observers: [UInt64: Observer] = [:]
    private var lastToken: UInt64 = 0

    public init() {}

    /// Adds `observer`; the token removes it.
    public mutating func add(_ observer: Observer) -> UInt64 {
        lastToken &+= 1
        observers[lastToken] = observer
        return lastToken
    }

    /// Removes the observer `token` was given for; nil if it is gone already.
    @discardableResult
    public mutating func remove(_ token: UInt64) -> Observer? {
        observers.removeValue(forKey: token)
    }

    /// Removes every observer and returns them (to finish them outside a lock).
    public mutating func removeAll() -> [Observer] {
        defer { observers.removeAll() }
        return Array(observers.values)
    }

    /// The current observers, in no particular order.
    public var all: Dictionary<UInt64, Observer>.Values { observers.values }

    /// How many observers there are.
    public var count: Int { observers.count }
}

extension ObserverTable: Sendable where Observer: Sendable {}
