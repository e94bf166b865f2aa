import CEpoll

/// What a descriptor is ready for.
public struct IOEvents: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Bytes (or a connection) to read.
    public static let readable = IOEvents(rawValue: 1 << 0)
    /// Room to write.
    public static let writable = IOEvents(rawValue: 1 << 1)
    /// The peer closed its end (reported whether asked for or not).
    public static let hangup = IOEvents(rawValue: 1 << 2)
    /// An error on the descriptor (reported whether asked for or not).
    public static let error = IOEvents(rawValue: 1 << 3)
}

extension IOEvents {
    var epollMask: UInt32 {
        var mask: UInt32 = 0
        if contains(.readable) { mask |= mr_epoll_in }
        if contains(.writable) { mask |= mr_epoll_out }
        return mask
    }

    init(epoll mask: UInt32) {
        var events: IOEvents = []
        if mask & mr_epoll_in != 0 { events.insert(.readable) }
        if mask & mr_epoll_out != 0 { events.insert(.writable) }
        if mask & (mr_epoll_hup | mr_epoll_rdhup) != 0 { events.insert(.hangup) }
        if mask & mr_epoll_err != 0 { events.insert(.error) }
        self = events
    }
}
