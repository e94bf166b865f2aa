#if canImport(Glibc)
import Glibc
#endif
import IPNetwork
import Logging
import NIOCore
import NIOPosix
import Synchronization

/// One datagram as a discovery run sees it.
struct Datagram: Sendable {
    var bytes: [UInt8]
    var host: String
    /// The interface of the socket it arrived on, when that socket is bound to one
    /// (nil: a listener on every interface, or the unicast socket).
    var interfaceName: String?
}

/// The UDP sockets of one discovery protocol (SSDP, mDNS): every socket feeds
/// one stream of datagrams, and a socket bound to an interface sends its
/// multicast out of that interface only.
struct MulticastSockets: Sendable {
    let datagrams: AsyncStream<Datagram>
    private let sink: AsyncStream<Datagram>.Continuation
    private let maximumDatagram: Int
    private let dropped = DroppedDatagrams()

    /// Datagrams longer than `maximumDatagram` are dropped where they arrive; so
    /// are the oldest waiting ones when 512 wait to be read. Both are counted:
    /// ``takeDropped()``.
    /// Datagrams each socket hands on per second, per source and in all, by default: well above
    /// what honest devices send (a few a second, a burst of answers to a search).
    static let defaultBudget = (perSource: SourceRateBudget.Rate(perSecond: 100, burst: 300),
                                overall: SourceRateBudget.Rate(perSecond: 2_000, burst: 4_000))
    private let budget: (perSource: SourceRateBudget.Rate, overall: SourceRateBudget.Rate)

    init(maximumDatagram: Int, budget: (perSource: SourceRateBudget.Rate, overall: SourceRateBudget.Rate) = MulticastSockets.defaultBudget) {
        self.maximumDatagram = maximumDatagram
        self.budget = budget
        (datagrams, sink) = AsyncStream.makeStream(of: Datagram.self, bufferingPolicy: .bufferingNewest(512))
    }

    /// The datagrams dropped before the stream handed them over since the last call, by reason.
    func takeDropped() -> [String: Int] { dropped.take() }

    /// Binds `host:port`; with `interface`, multicast goes out there with `ttl`, looped back to this host too.
    /// `reusePort` lets another daemon (Avahi on 5353) share the port.
    func bind(host: String, port: Int, sendingOn interface: MulticastInterface?, ttl: Int, reusePort: Bool = false) async throws -> any Channel {
        let sink = self.sink
        let limit = maximumDatagram
        let dropped = self.dropped
        let name = interface?.name
        let budget = self.budget
        var bootstrap = DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            // One byte over the limit: a longer datagram shows as too long (NIO's default of
            // 2 048 bytes would cut it short and hand the rest on as if it were whole).
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: limit + 1))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        DatagramForwarder(sink: sink, dropped: dropped, interfaceName: name, maximumSize: limit, budget: budget))
                }
            }
        if reusePort {
            bootstrap = bootstrap.channelOption(ChannelOptions.Types.SocketOption(level: .socket, name: NIOBSDSocket.Option(rawValue: SO_REUSEPORT)), value: 1)
        }
        if interface != nil {
            // Set with the socket, not after it: each option set later is another event-loop hop.
            bootstrap = bootstrap
                .channelOption(.ipOption(.ip_multicast_ttl), value: ttl)
                // Loopback on: a receiver on this very host (a renderer on the box, or one in the same
                // network namespace) hears our searches. Our own searches and queries come back to our
                // listeners too; those ignore M-SEARCH and DNS queries.
                .channelOption(.ipOption(.ip_multicast_loop), value: 1)
        }
        let channel = try await bootstrap.bind(host: host, port: port).get()
        if let interface, let provider = channel as? any SocketOptionProvider {
            // IP_MULTICAST_IF takes an in_addr, which the integer channel options cannot carry.
            var address = in_addr()
            inet_pton(AF_INET, interface.address, &address)
            try await provider.setIPMulticastIF(address).get()
        }
        return channel
    }

    /// Joins `group` on `interface` with a listener socket.
    func join(_ listener: any Channel, group: String, port: Int, on interface: MulticastInterface) async throws {
        guard let multicast = listener as? any MulticastChannel else { return }
        let address = try SocketAddress(ipAddress: group, port: port)
        let device = try? System.enumerateDevices().first { $0.name == interface.name && $0.address?.ipAddress == interface.address }
        try await multicast.joinGroup(address, device: device).get()
    }

    /// One sender per interface joined, by interface name.
    typealias Senders = [String: (interface: MulticastInterface, channel: any Channel)]

    /// Follows the interfaces: closes the senders of interfaces gone, and on each current one
    /// (of `names`, if given) not yet joined joins `group` with `listener` and opens a sender
    /// bound to it. Returns the senders now, and the interfaces joined this time.
    func follow(
        interfaces names: [String]?, senders: Senders, listener: any Channel, group: String, port: Int, logger: Logger
    ) async -> (senders: Senders, joined: [MulticastInterface]) {
        var senders = senders
        var joined: [MulticastInterface] = []
        let current = MulticastInterface.current().filter { names?.contains($0.name) ?? true }
        for (name, sender) in senders where !current.contains(sender.interface) {
            try? await sender.channel.close()
            senders[name] = nil
        }
        for interface in current where senders[interface.name] == nil {
            do {
                try await join(listener, group: group, port: port, on: interface)
                senders[interface.name] = (interface, try await bind(host: interface.address, port: port, sendingOn: interface, ttl: 255, reusePort: true))
                joined.append(interface)
            } catch {
                logger.notice("multicast on \(interface.name) (\(group):\(port)) unavailable: \(error)")
            }
        }
        return (senders, joined)
    }

    /// Sends `bytes` to `host:port` (nothing for a host that is not an IP literal).
    func send(_ bytes: [UInt8], on channel: any Channel, to host: String, port: Int) {
        guard let address = try? SocketAddress(ipAddress: host, port: port) else { return }
        channel.writeAndFlush(AddressedEnvelope(remoteAddress: address, data: ByteBuffer(bytes: bytes)), promise: nil)
    }

    /// Ends the datagram stream.
    func finish() { sink.finish() }
}

/// Counts of datagrams dropped on the event loops before the discovery actor saw
/// them, taken by that actor into its ``DatagramTally``.
private final class DroppedDatagrams: Sendable {
    private let counts = Mutex<[String: Int]>([:])

    func add(_ reason: String) { counts.withLock { $0[reason, default: 0] += 1 } }

    func take() -> [String: Int] {
        counts.withLock { counts in
            defer { counts = [:] }
            return counts
        }
    }
}

private final class DatagramForwarder: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    let sink: AsyncStream<Datagram>.Continuation
    let dropped: DroppedDatagrams
    let interfaceName: String?
    let maximumSize: Int
    /// Datagrams handed on per second, per source and in all: a flood is dropped (and counted)
    /// here on the event loop, before it costs a copy, a stream element and an actor hop each.
    private var budget: SourceRateBudget

    init(
        sink: AsyncStream<Datagram>.Continuation, dropped: DroppedDatagrams, interfaceName: String?, maximumSize: Int,
        budget: (perSource: SourceRateBudget.Rate, overall: SourceRateBudget.Rate)
    ) {
        self.budget = SourceRateBudget(perSource: budget.perSource, overall: budget.overall)
        self.sink = sink
        self.dropped = dropped
        self.interfaceName = interfaceName
        self.maximumSize = maximumSize
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard let host = envelope.remoteAddress.ipAddress else { return }
        guard envelope.data.readableBytes <= maximumSize else {
            dropped.add("over \(maximumSize) bytes")
            return
        }
        guard budget.spend(1, by: host, now: .nanoseconds(Int64(truncatingIfNeeded: NIODeadline.now().uptimeNanoseconds))) else {
            dropped.add("over the datagram budget")
            return
        }
        if case .dropped = sink.yield(Datagram(bytes: Array(envelope.data.readableBytesView), host: host, interfaceName: interfaceName)) {
            // The oldest waiting datagram made room: the actor reads slower than they arrive.
            dropped.add("arrived faster than read")
        }
    }
}
