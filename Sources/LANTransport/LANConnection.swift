import Logging
import NIOCore
import NIOPosix
#if Cast && !MEDIAROUTE_NO_TLS
import NIOSSL
import NIOTLS
#endif
import Synchronization
import Transport

/// A TCP connection to a LAN device at the host and port its announcement gave, with UDP
/// sockets that talk to that host only: what RAOP (and the Cast channel) need. Nothing
/// here reaches any other host.
final class LANConnection: Connection {
    let endpoint: Endpoint
    let lifetime: AsyncThrowingStream<Never, any Error>
    private let channel: any Channel
    private let stream: LANByteStream
    private let sockets: LANDatagramSockets

    /// Bytes a device may have sent that we have not read yet before the connection is
    /// closed as hostile (the protocols read whole messages of a few kilobytes).
    static let maximumUnreadChunks = 256

    private init(endpoint: Endpoint, channel: any Channel, stream: LANByteStream, sockets: LANDatagramSockets, lifetime: AsyncThrowingStream<Never, any Error>) {
        self.endpoint = endpoint
        self.channel = channel
        self.stream = stream
        self.sockets = sockets
        self.lifetime = lifetime
    }

    /// - Parameter tls: wrap the stream in TLS (the Cast channel). Receivers present
    ///   self-signed certificates no one can check offline, so none is verified here: the
    ///   certificate is handed up (``ByteStream/peerCertificate``) for the extension to pin.
    static func connect(to endpoint: Endpoint, host: String, port: Int, tls: Bool = false, timeout: Duration, logger: Logger) async throws(TransportError) -> LANConnection {
        let (incoming, incomingContinuation) = AsyncThrowingStream.makeStream(of: [UInt8].self, throwing: (any Error).self, bufferingPolicy: .bufferingOldest(maximumUnreadChunks))
        let (lifetime, lifetimeContinuation) = AsyncThrowingStream.makeStream(of: Never.self, throwing: (any Error).self)
        let reader = StreamReader(incoming: incomingContinuation, lifetime: lifetimeContinuation, name: endpoint.id)
        let nanoseconds = Int64(timeout.components.seconds) * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
        #if !Cast || MEDIAROUTE_NO_TLS
        guard !tls else { throw TransportError(.unsupported, "this build has no TLS (built without the Cast trait)") }
        #else
        let context: NIOSSLContext?
        if tls {
            do {
                context = try unverifiedTLSContext.get()
            } catch {
                throw TransportError(.unavailable, "no TLS: \(error)")
            }
        } else {
            context = nil
        }
        let handshake = TLSHandshakeWatcher()
        #endif
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(.nanoseconds(nanoseconds))
                .channelOption(.socketOption(.so_keepalive), value: 1)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        #if Cast && !MEDIAROUTE_NO_TLS
                        if let context {
                            handshake.arm(on: channel.eventLoop, timeout: .nanoseconds(nanoseconds))
                            try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: context, serverHostname: nil))
                            try channel.pipeline.syncOperations.addHandler(handshake)
                        }
                        #endif
                        try channel.pipeline.syncOperations.addHandler(reader)
                    }
                }
                .connect(host: host, port: port)
                .get()
        } catch {
            throw TransportError(.connectionRefused, "\(endpoint.id) at \(host):\(port): \(error)")
        }
        var certificate: [UInt8]?
        #if Cast && !MEDIAROUTE_NO_TLS
        if tls {
            do {
                try await handshake.completed()
                certificate = try await channel.nioSSL_peerCertificate().flatMapThrowing { try $0?.toDERBytes() }.get()
            } catch {
                try? await channel.close()
                throw TransportError(.connectionRefused, "\(endpoint.id) at \(host):\(port): no TLS session (\(error))")
            }
            guard certificate != nil else {
                try? await channel.close()
                throw TransportError(.authenticationFailed, "\(endpoint.id) at \(host):\(port) presented no certificate")
            }
        }
        #endif
        let local = channel.localAddress?.ipAddress ?? "0.0.0.0"
        let stream = LANByteStream(channel: channel, incoming: incoming, localAddress: local, peerCertificate: certificate)
        let sockets = LANDatagramSockets(host: host, localAddress: local, logger: logger)
        return LANConnection(endpoint: endpoint, channel: channel, stream: stream, sockets: sockets, lifetime: lifetime)
    }

    func close() async {
        await sockets.closeAll()
        try? await channel.close()
    }

    var byteStream: (any ByteStream)? { stream }
    var datagrams: (any DatagramSockets)? { sockets }
}

/// Hands what the device sends to the stream; ends it (and the connection's lifetime) when
/// the device closes, fails, or sends faster than it is read.
private final class StreamReader: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let incoming: AsyncThrowingStream<[UInt8], any Error>.Continuation
    let lifetime: AsyncThrowingStream<Never, any Error>.Continuation
    let name: String

    init(incoming: AsyncThrowingStream<[UInt8], any Error>.Continuation, lifetime: AsyncThrowingStream<Never, any Error>.Continuation, name: String) {
        self.incoming = incoming
        self.lifetime = lifetime
        self.name = name
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
        if case .dropped = incoming.yield(bytes) {
            let error = TransportError(.connectionLost, "\(name) sent more than is read; closed")
            incoming.finish(throwing: error)
            lifetime.finish(throwing: error)
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let failure = TransportError(.connectionLost, "\(name): \(error)")
        incoming.finish(throwing: failure)
        lifetime.finish(throwing: failure)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        incoming.finish()
        lifetime.finish(throwing: TransportError(.connectionLost, "\(name) closed the connection"))
    }
}

private struct LANByteStream: ByteStream {
    let channel: any Channel
    let incoming: AsyncThrowingStream<[UInt8], any Error>
    let localAddress: String
    let peerCertificate: [UInt8]?

    func write(_ bytes: [UInt8]) async throws(TransportError) {
        do {
            try await channel.writeAndFlush(channel.allocator.buffer(bytes: bytes))
        } catch {
            throw TransportError(.connectionLost, "write failed: \(error)")
        }
    }

    /// `tcpi_min_rtt` of the kernel's `struct tcp_info` (<linux/tcp.h>): its offset has been
    /// fixed since Linux 4.10, as fields are only ever appended. Glibc's `struct tcp_info` (the
    /// one Swift sees, and NIO's `getTCPInfo`) ends before it, so the kernel's bytes are read
    /// into a buffer as large as the kernel's structure and the field is taken at its offset.
    static let minimumRoundTripOffset = 148
    /// `tcpi_rtt` (the smoothed round trip, µs), in glibc's part of the structure.
    static let smoothedRoundTripOffset = 68
    typealias KernelTCPInfo = (
        UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
        UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)

    func leastRoundTrip() async -> Duration? { await kernelRoundTrips()?.least }

    func smoothedRoundTrip() async -> Duration? { await kernelRoundTrips()?.smoothed }

    /// `tcpi_min_rtt` and `tcpi_rtt` of the kernel's `struct tcp_info`; nil where it cannot be read.
    private func kernelRoundTrips() async -> (least: Duration?, smoothed: Duration?)? {
        guard let provider = channel as? any SocketOptionProvider,
            let info: KernelTCPInfo = try? await provider.unsafeGetSocketOption(level: .tcp, name: .tcp_info).get()
        else { return nil }
        let (least, smoothed) = withUnsafeBytes(of: info) {
            ($0.loadUnaligned(fromByteOffset: Self.minimumRoundTripOffset, as: UInt32.self), $0.loadUnaligned(fromByteOffset: Self.smoothedRoundTripOffset, as: UInt32.self))
        }
        // 0: a kernel older than the field (the buffer starts zeroed) or no sample yet; ~0: no sample yet.
        func duration(_ microseconds: UInt32) -> Duration? { microseconds == 0 || microseconds == .max ? nil : .microseconds(microseconds) }
        return (duration(least), duration(smoothed))
    }
}

#if Cast && !MEDIAROUTE_NO_TLS
/// The one TLS client context of the process, made on first use: nothing is verified (the
/// extension pins what the device presents), so no trust store is read: loading the system's
/// CA bundle would cost the daemon megabytes for certificates it never consults.
private let unverifiedTLSContext: Result<NIOSSLContext, any Error> = Result {
    var configuration = TLSConfiguration.makeClientConfiguration()
    configuration.certificateVerification = .none
    configuration.trustRoots = .certificates([])
    return try NIOSSLContext(configuration: configuration)
}

/// Waits for the TLS handshake: done, failed, or not done within the connection's timeout
/// (a peer that accepts TCP and never answers the handshake does not hold activation).
private final class TLSHandshakeWatcher: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    private let outcome = Mutex<(promise: EventLoopPromise<Void>?, result: Result<Void, any Error>?)>((nil, nil))

    func arm(on eventLoop: any EventLoop, timeout: TimeAmount) {
        let promise = eventLoop.makePromise(of: Void.self)
        outcome.withLock { $0.promise = promise }
        eventLoop.scheduleTask(in: timeout) { self.finish(.failure(TransportError(.timedOut, "the TLS handshake took too long"))) }
    }

    func completed() async throws {
        guard let promise = outcome.withLock({ $0.promise }) else { return }
        try await promise.futureResult.get()
    }

    private func finish(_ result: Result<Void, any Error>) {
        let promise = outcome.withLock { state -> EventLoopPromise<Void>? in
            guard state.result == nil else { return nil }
            state.result = result
            return state.promise
        }
        promise?.completeWith(result)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event { finish(.success(())) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish(.failure(error))
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(.failure(TransportError(.connectionLost, "closed during the TLS handshake")))
        context.fireChannelInactive()
    }
}

#endif

/// UDP sockets bound next to the connection's local address, each sending only to `host`.
private final class LANDatagramSockets: DatagramSockets {
    let host: String
    let localAddress: String
    let logger: Logger
    private let open = Mutex<[any Channel]>([])

    init(host: String, localAddress: String, logger: Logger) {
        self.host = host
        self.localAddress = localAddress
        self.logger = logger
    }

    func open() async throws(TransportError) -> any DatagramSocket {
        let (incoming, continuation) = AsyncStream.makeStream(of: DeviceDatagram.self, bufferingPolicy: .bufferingNewest(256))
        let target: SocketAddress
        do {
            target = try SocketAddress(ipAddress: host, port: 0)
        } catch {
            throw TransportError(.unreachable, "\(host) is not an IP address")
        }
        let receiver = DatagramReceiver(host: target, incoming: continuation)
        let channel: any Channel
        do {
            channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelInitializer { channel in channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(receiver) } }
                .bind(host: localAddress, port: 0)
                .get()
        } catch {
            throw TransportError(.unavailable, "no UDP socket: \(error)")
        }
        self.open.withLock { $0.append(channel) }
        return LANDatagramSocket(channel: channel, host: host, localPort: channel.localAddress?.port ?? 0, incoming: incoming)
    }

    func closeAll() async {
        let channels = open.withLock { channels in
            defer { channels = [] }
            return channels
        }
        for channel in channels { try? await channel.close() }
    }
}

/// Keeps what the device's host sends; anything from another host is dropped unread.
private final class DatagramReceiver: ChannelInboundHandler, Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    let host: SocketAddress
    let incoming: AsyncStream<DeviceDatagram>.Continuation

    init(host: SocketAddress, incoming: AsyncStream<DeviceDatagram>.Continuation) {
        self.host = host
        self.incoming = incoming
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var envelope = unwrapInboundIn(data)
        guard envelope.remoteAddress.ipAddress == host.ipAddress, let port = envelope.remoteAddress.port else { return }
        let bytes = envelope.data.readBytes(length: min(envelope.data.readableBytes, 2048)) ?? []
        incoming.yield(DeviceDatagram(sourcePort: port, bytes: bytes))
    }

    func channelInactive(context: ChannelHandlerContext) {
        incoming.finish()
    }
}

private struct LANDatagramSocket: DatagramSocket {
    let channel: any Channel
    let host: String
    let localPort: Int
    let incoming: AsyncStream<DeviceDatagram>

    func send(_ bytes: [UInt8], toPort port: Int) async throws(TransportError) {
        guard (1...65_535).contains(port) else { throw TransportError(.unreachable, "port \(port)") }
        do {
            let address = try SocketAddress(ipAddress: host, port: port)
            try await channel.writeAndFlush(AddressedEnvelope(remoteAddress: address, data: channel.allocator.buffer(bytes: bytes)))
        } catch {
            throw TransportError(.connectionLost, "datagram not sent: \(error)")
        }
    }

    func close() async {
        try? await channel.close()
    }
}
