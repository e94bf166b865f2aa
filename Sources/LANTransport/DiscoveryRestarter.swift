#if canImport(Glibc)
import Glibc
#endif
public import IPNetwork
public import Logging
import MediaClock
import Synchronization
import Transport

/// Restarts SSDP discovery on an interface as soon as the network-changed hook
/// says it came up or got an IPv4 address, instead of waiting for the next periodic search.
public final class DiscoveryRestarter: Sendable {
    private let task: Task<Void, Never>

    public init(changes: AsyncStream<NetworkChange>, searcher: SSDPSearcher, logger: Logger = Logger(label: "mediaroute.lan")) {
        task = Task {
            for await change in changes {
                switch change {
                case .linkUp(_, let index), .addressAdded(_, let index, _), .wifiConnected(let index), .wifiRoamed(let index):
                    for interface in MulticastInterface.current() where interface.index == index {
                        do {
                            try searcher.search(on: interface)
                            logger.info("discovery restarted", metadata: ["interface": "\(interface.name)", "after": "\(change)"])
                        } catch {
                            logger.notice("discovery not restarted on \(interface.name): \(error)")
                        }
                    }
                case .linkDown, .addressRemoved, .wifiDisconnected:
                    continue
                }
            }
        }
    }

    /// Refreshes the transport's interface list on every link or address change:
    /// new interfaces are searched at once, gone ones drop their devices.
    public init(changes: AsyncStream<NetworkChange>, transport: LANTransport, logger: Logger = Logger(label: "mediaroute.lan")) {
        task = Task {
            for await change in changes {
                switch change {
                case .linkUp, .linkDown, .addressAdded, .addressRemoved, .wifiConnected, .wifiRoamed, .wifiDisconnected:
                    logger.debug("LAN interfaces refreshed", metadata: ["after": "\(change)"])
                    transport.refreshInterfaces()
                }
            }
        }
    }

    public func stop() { task.cancel() }
    deinit { task.cancel() }
}
