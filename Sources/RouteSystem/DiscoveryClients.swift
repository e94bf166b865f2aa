/// Who asked for discovery, and how many times: extensions discover while anyone wants them
/// to, and stop when the last one is done. A client that asks twice must be done twice.
struct DiscoveryClients {
    private var counts: [String: Int] = [:]

    /// Whether anyone wants discovery.
    var isEmpty: Bool { counts.isEmpty }

    /// Counts one request from `client`; true when discovery has to start.
    mutating func begin(_ client: String) -> Bool {
        counts[client, default: 0] += 1
        return counts.count == 1 && counts[client] == 1
    }

    /// Ends one request from `client`; true when discovery has to stop (nobody wants it now).
    mutating func end(_ client: String) -> Bool {
        guard let count = counts[client] else { return false }
        counts[client] = count > 1 ? count - 1 : nil
        return counts.isEmpty
    }

    /// Ends every request from `client` (it went away); true when discovery has to stop.
    mutating func endAll(_ client: String) -> Bool {
        guard counts.removeValue(forKey: client) != nil else { return false }
        return counts.isEmpty
    }

    /// Forgets every request (shutdown); true when discovery was running.
    mutating func removeAll() -> Bool {
        defer { counts.removeAll() }
        return !counts.isEmpty
    }
}
