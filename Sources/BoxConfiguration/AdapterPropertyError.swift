

/// A MediaRoute udev property with a value the daemon cannot use.
public struct AdapterPropertyError: Error, Sendable, Hashable, CustomStringConvertible {
    public var adapter: String
    public var message: String
    public var description: String { "\(adapter): \(message) (run mediarouted --check-config to find the rule)" }
}
