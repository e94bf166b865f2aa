import Synchronization

/// What a consumer of a bus's signal stream needs from a connection: a
/// handler for matching signals on the connection's own thread, method calls
/// whose replies are handled in order with those signals, and name owners.
///
/// ``DBusConnection`` (libdbus) and ``DBusSignalConnection`` (MediaRoute's own
/// reader, for heavy streams) both provide it; see ``DBusConnection/handleSignals(matchingAny:finished:_:)``.
public protocol DBusSignalSource: AnyObject, Sendable {
    func handleSignals(
        matchingAny rules: [DBusMatchRule], finished: @escaping @Sendable () -> Void,
        _ handler: @escaping @Sendable (DBusMessage) -> Void
    ) async throws(DBusError) -> DBusSignalSubscription

    func call(
        destination: String?, path: DBusObjectPath, interface: String?, member: String,
        _ arguments: [DBusValue], timeout: Duration, replyHandler: (@Sendable ([DBusValue]) -> Void)?
    ) async throws(DBusError) -> [DBusValue]

    func nameOwner(of name: String) async throws(DBusError) -> String?
}

/// The connection side of ``DBusSignalSource``: what `handleSignals` is built on.
protocol DBusSignalRouting: DBusSignalSource {
    /// `body` with the connection's routes, under its lock; `open` is false once it has ended.
    func withRoutes<T>(_ body: (inout DBusSignalRoutes, _ open: Bool) -> T) -> T
    func send(_ message: DBusMessage)
}

extension DBusSignalRouting {
    func addSubscription(_ rule: DBusMatchRule, delivery: DBusSignalRoutes.Delivery, finish: @escaping @Sendable () -> Void) -> UInt64 {
        let subscription = DBusSignalRoutes.Subscription(rule: rule, delivery: delivery, finish: finish)
        let (id, open) = withRoutes { routes, open in (routes.add(subscription, accepting: open), open) }
        // A connection that has ended finishes a late subscriber at once.
        if !open { finish() }
        return id
    }

    func removeSubscription(_ id: UInt64) {
        withRoutes { routes, _ in routes.remove(id) }
    }

    /// Records the current owner of `name`, unless a `NameOwnerChanged` already did.
    func recordOwner(_ owner: String?, of name: String) {
        withRoutes { routes, _ in routes.record(owner, of: name) }
    }

    func subscribe(
        matchingAny rules: [DBusMatchRule], finished: @escaping @Sendable () -> Void, delivery: DBusSignalRoutes.Delivery
    ) async throws(DBusError) -> DBusSignalSubscription {
        for rule in rules {
            if let sender = rule.sender, !sender.hasPrefix(":"), sender != "org.freedesktop.DBus" {
                recordOwner(try await nameOwner(of: sender), of: sender)
            }
            _ = try await call(
                destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                member: "AddMatch", [.string(rule.ruleString)], timeout: DBusConnection.defaultTimeout, replyHandler: nil)
        }
        // `finished` once, however many rules, whether the connection ends or the subscription is cancelled.
        let remaining = Mutex(rules.count)
        let finishOnce: @Sendable () -> Void = {
            if remaining.withLock({ count -> Bool in
                guard count > 0 else { return false }
                count -= 1
                return count == 0
            }) { finished() }
        }
        let ids = rules.map { addSubscription($0, delivery: delivery, finish: finishOnce) }
        return DBusSignalSubscription { [weak self] in
            guard let self else { return }
            for (id, rule) in zip(ids, rules) {
                self.removeSubscription(id)
                self.send(.methodCall(
                    destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                    member: "RemoveMatch", body: [.string(rule.ruleString)]))
            }
            if remaining.withLock({ count -> Bool in defer { count = 0 }; return count > 0 }) { finished() }
        }
    }

    func lookUpOwner(of name: String) async throws(DBusError) -> String? {
        do {
            return try await call(
                destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                member: "GetNameOwner", [.string(name)], timeout: DBusConnection.defaultTimeout, replyHandler: nil
            ).first?.string
        } catch where error.name == "org.freedesktop.DBus.Error.NameHasNoOwner" {
            return nil
        }
    }
}

/// Signal subscriptions and the owners of the well-known names they match on;
/// kept under a connection's lock, used on its I/O thread.
struct DBusSignalRoutes {
    /// How a subscriber takes its signals, on the I/O thread, in arrival order.
    enum Delivery: Sendable {
        /// The whole message, body decoded.
        case decoded(@Sendable (DBusMessage) -> Void)
        /// The header fields and the body still on the wire (``DBusSignalConnection`` only);
        /// a malformed body ends the connection.
        case raw(@Sendable (DBusMessage, DBusWireBody) throws(DBusWireError) -> Void)
    }

    struct Subscription {
        let rule: DBusMatchRule
        let delivery: Delivery
        /// Called once when the connection ends.
        let finish: @Sendable () -> Void
    }

    private(set) var subscriptions: [UInt64: Subscription] = [:]
    private var nextID: UInt64 = 0
    /// Current owners of the well-known names that subscriptions match on.
    private var owners: [String: String] = [:]

    /// Adds a subscription (unless `accepting` is false) and returns its id.
    mutating func add(_ subscription: Subscription, accepting: Bool) -> UInt64 {
        nextID += 1
        if accepting { subscriptions[nextID] = subscription }
        return nextID
    }

    mutating func remove(_ id: UInt64) {
        subscriptions.removeValue(forKey: id)
    }

    mutating func record(_ owner: String?, of name: String) {
        if owners[name] == nil, let owner { owners[name] = owner }
    }

    /// Whether routing `header` (a signal whose body is not decoded yet) needs
    /// its body: a rule on the first argument matches it otherwise.
    func needsBody(toRoute header: DBusMessage) -> Bool {
        subscriptions.values.contains { subscription in
            guard subscription.rule.arg0 != nil else { return false }
            var rule = subscription.rule
            rule.arg0 = nil
            return rule.matches(header, ownerOfSender: rule.sender.flatMap { owners[$0] })
        }
    }

    /// Follows `NameOwnerChanged` for watched names (its body must be decoded);
    /// returns the deliveries `signal` goes to.
    mutating func handlers(for signal: DBusMessage) -> [Delivery] {
        if signal.sender == "org.freedesktop.DBus", signal.member == "NameOwnerChanged", signal.body.count == 3,
            let name = signal.body[0].string, owners[name] != nil || subscriptions.values.contains(where: { $0.rule.sender == name })
        {
            let newOwner = signal.body[2].string ?? ""
            owners[name] = newOwner.isEmpty ? nil : newOwner
        }
        return subscriptions.values.compactMap { subscription in
            let owner = subscription.rule.sender.flatMap { owners[$0] }
            return subscription.rule.matches(signal, ownerOfSender: owner) ? subscription.delivery : nil
        }
    }

    /// Every subscription, removed: the connection has ended.
    mutating func removeAll() -> [Subscription] {
        defer { subscriptions.removeAll() }
        return Array(subscriptions.values)
    }
}
