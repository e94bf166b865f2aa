import Synchronization

/// What a consumer of a bus's signal stream needs from a connection: a
/// handler for matching signals on the reactor thread, method calls
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
/// kept under a connection's lock, used on the reactor thread.
///
/// Routing runs for every signal (a thousand a second in a BlueZ scan): the
/// subscriptions are an array in the order they were made, each with the
/// current owner of its sender's name beside it (no name look-up per signal),
/// and the usual one or two deliveries come back without an allocation.
struct DBusSignalRoutes {
    /// How a subscriber takes its signals, on the reactor thread, in arrival order.
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

    /// The deliveries of one signal, in subscription order.
    struct Deliveries: Sequence {
        private var first: Delivery?
        private var second: Delivery?
        private var rest: [Delivery] = []

        mutating func append(_ delivery: Delivery) {
            if first == nil {
                first = delivery
            } else if second == nil {
                second = delivery
            } else {
                rest.append(delivery)
            }
        }

        func makeIterator() -> Iterator { Iterator(deliveries: self) }

        struct Iterator: IteratorProtocol {
            let deliveries: Deliveries
            var index = 0

            mutating func next() -> Delivery? {
                defer { index += 1 }
                switch index {
                case 0: return deliveries.first
                case 1: return deliveries.second
                default: return index - 2 < deliveries.rest.count ? deliveries.rest[index - 2] : nil
                }
            }
        }
    }

    private struct Route {
        let id: UInt64
        let subscription: Subscription
        /// The current owner of `subscription.rule.sender` when that is a well-known name.
        var owner: String?
    }

    private var routes: [Route] = []
    private var nextID: UInt64 = 0
    /// Current owners of the well-known names that subscriptions match on.
    private var owners: [String: String] = [:]

    var subscriptions: [Subscription] { routes.map(\.subscription) }

    /// Adds a subscription (unless `accepting` is false) and returns its id.
    mutating func add(_ subscription: Subscription, accepting: Bool) -> UInt64 {
        nextID += 1
        if accepting {
            routes.append(Route(id: nextID, subscription: subscription, owner: subscription.rule.sender.flatMap { owners[$0] }))
        }
        return nextID
    }

    mutating func remove(_ id: UInt64) {
        routes.removeAll { $0.id == id }
    }

    mutating func record(_ owner: String?, of name: String) {
        if owners[name] == nil, let owner { setOwner(owner, of: name) }
    }

    private mutating func setOwner(_ owner: String?, of name: String) {
        owners[name] = owner
        for index in routes.indices where routes[index].subscription.rule.sender == name { routes[index].owner = owner }
    }

    /// The deliveries `signal` goes to, following `NameOwnerChanged` for watched
    /// names; nil when its body is not decoded (`bodyDecoded` false) and routing
    /// needs it: the bus's own signals, and rules on the first argument that
    /// match it otherwise.
    mutating func deliveries(for signal: DBusMessage, bodyDecoded: Bool) -> Deliveries? {
        if signal.sender == "org.freedesktop.DBus" {
            guard bodyDecoded else { return nil }
            if signal.member == "NameOwnerChanged", signal.body.count == 3, let name = signal.body[0].string,
                owners[name] != nil || routes.contains(where: { $0.subscription.rule.sender == name })
            {
                let newOwner = signal.body[2].string ?? ""
                setOwner(newOwner.isEmpty ? nil : newOwner, of: name)
            }
        }
        var deliveries = Deliveries()
        for route in routes {
            let rule = route.subscription.rule
            if !bodyDecoded, rule.arg0 != nil {
                var withoutArgument = rule
                withoutArgument.arg0 = nil
                if withoutArgument.matches(signal, ownerOfSender: route.owner) { return nil }
                continue
            }
            if rule.matches(signal, ownerOfSender: route.owner) { deliveries.append(route.subscription.delivery) }
        }
        return deliveries
    }

    /// Every subscription, removed: the connection has ended.
    mutating func removeAll() -> [Subscription] {
        defer { routes.removeAll() }
        return subscriptions
    }
}
