#if canImport(Glibc)
import Glibc
#endif
public import Logging
public import NIOCore
import NIOHTTP1
public import NIOPosix
import Synchronization

/// The connections of one server, counted per peer address.
final class ConnectionLimiter: Sendable {
    private struct State {
        var open = 0
        var perHost: [String: Int] = [:]
        var refused = 0
        var timedOut = 0
    }

    let limits: HTTPServerLimits
    private let state = Mutex(State())

    init(limits: HTTPServerLimits) {
        self.limits = limits
    }

    /// Whether a connection from `host` may stay; if so it is counted until ``release(_:)``.
    func admit(_ host: String) -> Bool {
        state.withLock { state in
            guard state.open < limits.maximumConnections, state.perHost[host, default: 0] < limits.maximumConnectionsPerHost else {
                state.refused += 1
                return false
            }
            state.open += 1
            state.perHost[host, default: 0] += 1
            return true
        }
    }

    func release(_ host: String) {
        state.withLock { state in
            state.open -= 1
            state.perHost[host, default: 1] -= 1
            if state.perHost[host] == 0 { state.perHost[host] = nil }
        }
    }

    func countTimeout() {
        state.withLock { $0.timedOut += 1 }
    }

    var counts: HTTPServer.ConnectionCounts {
        state.withLock { HTTPServer.ConnectionCounts(open: $0.open, refused: $0.refused, timedOut: $0.timedOut) }
    }
}

/// The one small HTTP/1.1 server on swift-nio the box runs, for what devices fetch
/// from us or send us (GENA callbacks, media files) and for local apps' pushes:
/// request bodies bounded (a body over the limit is not read; the handler is told),
/// connections capped in all and per peer (``HTTPServerLimits``), a request that does not
/// arrive whole within its deadline closed, connections silent for the idle timeout
/// closed, keep-alive honoured. NIO's decoder bounds a request head to 80 KB; with the
/// caps and the deadline a peer can hold at most that much per connection, briefly.
public final class HTTPServer: Sendable {
    public typealias Handler = @Sendable (HTTPServerRequest) async -> HTTPServerResponse

    /// Connections open now, refused over the caps, and closed at the request deadline, since the start.
    public struct ConnectionCounts: Sendable, Equatable {
        public var open: Int
        public var refused: Int
        public var timedOut: Int
    }

    /// The address and port the server listens on.
    public let host: String
    public let port: UInt16
    private let channel: any Channel
    private let limiter: ConnectionLimiter

    /// What the server's peers hold now and what it refused (for tests and status).
    public var connectionCounts: ConnectionCounts { limiter.counts }

    /// Listens on `host` (an interface address, or loopback; port 0 picks one).
    /// - Parameter answersOversizedRequests: a request whose body is over
    ///   `maximumRequestBytes` goes to the handler (flagged ``HTTPServerRequest/bodyTooLarge``)
    ///   instead of being answered 413 by the server.
    /// - Throws: ``HTTPServerError`` when it cannot bind.
    public init(
        host: String, port: UInt16 = 0, maximumRequestBytes: Int = 64 * 1024, answersOversizedRequests: Bool = false,
        idleTimeout: Duration = .seconds(30), backlog: Int32 = 256, limits: HTTPServerLimits = HTTPServerLimits(),
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, logger: Logger = Logger(label: "mediaroute.http"),
        handler: @escaping Handler
    ) async throws(HTTPServerError) {
        let limiter = ConnectionLimiter(limits: limits)
        self.limiter = limiter
        do {
            channel = try await ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: backlog)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
                .childChannelInitializer { channel in
                    // Over a cap: closed at once, before any byte is read.
                    let peer = channel.remoteAddress?.ipAddress ?? "?"
                    guard limiter.admit(peer) else { return channel.close() }
                    channel.closeFuture.whenComplete { _ in limiter.release(peer) }
                    return channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(IdleStateHandler(allTimeout: TimeAmount(idleTimeout)))
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                        try channel.pipeline.syncOperations.addHandler(RequestDeadline(deadline: limits.requestDeadline, limiter: limiter))
                        try channel.pipeline.syncOperations.addHandler(
                            RequestHandler(
                                maximumBytes: maximumRequestBytes, answersOversizedRequests: answersOversizedRequests, handler: handler, logger: logger))
                    }
                }
                .bind(host: host, port: Int(port)).get()
        } catch {
            throw HTTPServerError(description: "cannot listen on \(host):\(port): \(error)")
        }
        self.host = host
        self.port = UInt16(channel.localAddress?.port ?? 0)
    }

    /// Stops listening (open connections finish their current answer).
    public func close() async {
        try? await channel.close()
    }

    /// Returns when the server has stopped listening.
    public func waitUntilClosed() async {
        try? await channel.closeFuture.get()
    }
}

/// Closes a connection whose request has not arrived whole by its deadline: armed when the
/// connection starts and when an answer ends, disarmed when a request's last part arrives,
/// so bytes trickled in cannot keep a connection (and its descriptor) forever.
final class RequestDeadline: ChannelDuplexHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let deadline: Duration
    private let limiter: ConnectionLimiter
    private var timer: Scheduled<Void>?

    init(deadline: Duration, limiter: ConnectionLimiter) {
        self.deadline = deadline
        self.limiter = limiter
    }

    func handlerAdded(context: ChannelHandlerContext) {
        arm(context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .end = unwrapInboundIn(data) {
            timer?.cancel()
            timer = nil
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { arm(context) }
        context.write(data, promise: promise)
    }

    private func arm(_ context: ChannelHandlerContext) {
        timer?.cancel()
        let limiter = self.limiter
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: TimeAmount(deadline)) {
            limiter.countTimeout()
            bound.value.close(promise: nil)
        }
    }
}

final class RequestHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let maximumBytes: Int
    private let answersOversizedRequests: Bool
    private let handler: HTTPServer.Handler
    private let logger: Logger
    private var request: HTTPServerRequest?
    private var keepAlive = false
    private var tooLarge = false

    init(maximumBytes: Int, answersOversizedRequests: Bool, handler: @escaping HTTPServer.Handler, logger: Logger) {
        self.maximumBytes = maximumBytes
        self.answersOversizedRequests = answersOversizedRequests
        self.handler = handler
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            var headers: [String: String] = [:]
            for (name, value) in head.headers { headers[name.lowercased()] = value }
            keepAlive = head.isKeepAlive
            tooLarge = (headers["content-length"].flatMap { Int($0) } ?? 0) > maximumBytes
            request = HTTPServerRequest(
                method: head.method.rawValue, path: head.uri, headers: headers, body: [], remoteHost: context.remoteAddress?.ipAddress)
        case .body(let buffer):
            guard request != nil, !tooLarge else { return }
            if request!.body.count + buffer.readableBytes > maximumBytes {
                tooLarge = true
                request!.body = []
            } else {
                request!.body.append(contentsOf: buffer.readableBytesView)
            }
        case .end:
            guard var request else { return }
            self.request = nil
            if tooLarge {
                keepAlive = false
                request.bodyTooLarge = true
                guard answersOversizedRequests else {
                    respond(context: context, HTTPServerResponse(status: 413), head: request)
                    return
                }
            }
            let handler = self.handler
            let loop = context.eventLoop
            let bound = NIOLoopBound((self, context), eventLoop: loop)
            let complete = request
            Task {
                let response = await handler(complete)
                loop.execute {
                    let (this, context) = bound.value
                    this.respond(context: context, response, head: complete)
                }
            }
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    private func respond(context: ChannelHandlerContext, _ response: HTTPServerResponse, head request: HTTPServerRequest) {
        var head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: response.status))
        for (name, value) in response.headers { head.headers.add(name: name, value: value) }
        let keepAlive = self.keepAlive
        head.headers.replaceOrAdd(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        switch response.body {
        case .bytes(let bytes):
            head.headers.replaceOrAdd(name: "Content-Length", value: String(request.method == "HEAD" ? 0 : bytes.count))
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            if !bytes.isEmpty && request.method != "HEAD" { context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: bytes)))), promise: nil) }
            finish(context: context, keepAlive: keepAlive)
        case .file(let path, let range, let total, let identity):
            sendFile(context: context, head: head, request: request, range: range, total: total, keepAlive: keepAlive) {
                let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
                var info = stat()
                guard fd >= 0, fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, identity.map({ $0 == FileIdentity(info) }) ?? true else {
                    if fd >= 0 { Glibc.close(fd) }
                    self.logger.warning("served file vanished or was replaced", metadata: ["path": "\(path)"])
                    return nil
                }
                return fd
            }
        case .live(let body, let framing):
            sendLive(context: context, head: head, request: request, body: body, framing: framing)
        case .descriptor(let file, let range, let total):
            sendFile(context: context, head: head, request: request, range: range, total: total, keepAlive: keepAlive) {
                // A duplicate of its own per response: closed when this response ends, whatever the session does.
                let fd = fcntl(file.descriptor, F_DUPFD_CLOEXEC, 0)
                guard fd >= 0 else {
                    self.logger.warning("cannot duplicate a handed file's descriptor", metadata: ["name": "\(file.name)", "errno": "\(errno)"])
                    return nil
                }
                return fd
            }
        }
    }

    /// Sends a live body as it is produced: a chunk is read only when the previous one is
    /// written, so a slow peer costs one chunk here (the stream keeps its own bounded backlog).
    private func sendLive(context: ChannelHandlerContext, head: HTTPResponseHead, request: HTTPServerRequest, body: any HTTPLiveBody, framing: HTTPLiveFraming) {
        var head = head
        head.headers.remove(name: "Content-Length")
        switch framing {
        case .closeDelimited:
            // NIO frames an HTTP/1.1 answer without a length as chunked; an HTTP/1.0 one is left to end at the close.
            head.version = .http1_0
            head.headers.replaceOrAdd(name: "Connection", value: "close")
        case .chunked:
            head.headers.replaceOrAdd(name: "Connection", value: "close")
        case .contentLength(let length):
            head.headers.replaceOrAdd(name: "Content-Length", value: String(length))
            head.headers.replaceOrAdd(name: "Connection", value: "close")
        }
        // The head goes at once, before the first bytes of the body: a renderer that fetches
        // before the first samples (a route started before its app writes) plugs its decoder
        // on the head's Content-Type while it waits, off the path of the first sound
        // (gmediarender: 30–41 ms from the first samples to their sound with the head sent
        // with them, 6–7 ms with the head sent first; Docs/benchmarks.md).
        context.writeAndFlush(wrapOutboundOut(.head(head)), promise: nil)
        guard request.method != "HEAD" else {
            body.close()
            finish(context: context, keepAlive: false)
            return
        }
        context.channel.closeFuture.whenComplete { _ in body.close() }
        pumpLive(context: context, body: body, framing: framing)
    }

    private func pumpLive(context: ChannelHandlerContext, body: any HTTPLiveBody, framing: HTTPLiveFraming) {
        guard context.channel.isActive else { return body.close() }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        switch body.read(maximum: 65_536) {
        case .bytes(let bytes):
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: bytes))))).whenComplete { result in
                let (this, context) = bound.value
                guard case .success = result else { return body.close() }
                this.pumpLive(context: context, body: body, framing: framing)
            }
        case .none:
            let loop = context.eventLoop
            body.whenReadable {
                loop.execute {
                    let (this, context) = bound.value
                    this.pumpLive(context: context, body: body, framing: framing)
                }
            }
        case .ended:
            body.close()
            if case .chunked = framing {
                finish(context: context, keepAlive: false)
            } else {
                context.close(promise: nil)
            }
        }
    }

    /// Sends the head of a file's answer (its length: the range's, or the file's), then, unless
    /// it is a HEAD or empty, the bytes read from the descriptor `openDescriptor` gives (nil: the
    /// connection is closed, the promised length cannot be kept).
    private func sendFile(
        context: ChannelHandlerContext, head: HTTPResponseHead, request: HTTPServerRequest, range: ClosedRange<Int>?, total: Int,
        keepAlive: Bool, openDescriptor: () -> Int32?
    ) {
        var head = head
        let span = range ?? 0...max(total - 1, 0)
        let length = total == 0 ? 0 : span.count
        head.headers.replaceOrAdd(name: "Content-Length", value: String(length))
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        guard request.method != "HEAD", length > 0 else {
            finish(context: context, keepAlive: keepAlive)
            return
        }
        guard let fd = openDescriptor() else {
            context.close(promise: nil)
            return
        }
        sendChunk(context: context, fd: fd, offset: span.lowerBound, remaining: length, keepAlive: keepAlive)
    }

    /// Writes the file 64 KiB at a time, reading the next chunk only when the
    /// previous one is written, so a slow renderer costs one chunk of memory.
    /// The `pread` of a local file is short; it runs on the event loop.
    private func sendChunk(context: ChannelHandlerContext, fd: Int32, offset: Int, remaining: Int, keepAlive: Bool) {
        var buffer = context.channel.allocator.buffer(capacity: min(remaining, 65_536))
        let count = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: min(remaining, 65_536)) { raw in
            max(pread(fd, raw.baseAddress, min(remaining, 65_536), off_t(offset)), 0)
        }
        guard count > 0 else {
            Glibc.close(fd)
            context.close(promise: nil)  // the file shrank: the length we promised cannot be kept
            return
        }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(buffer)))).whenComplete { result in
            let (this, context) = bound.value
            guard case .success = result, remaining - count > 0 else {
                Glibc.close(fd)
                if case .success = result { this.finish(context: context, keepAlive: keepAlive) }
                return
            }
            this.sendChunk(context: context, fd: fd, offset: offset + count, remaining: remaining - count, keepAlive: keepAlive)
        }
    }

    private func finish(context: ChannelHandlerContext, keepAlive: Bool) {
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
            if !keepAlive { bound.value.close(promise: nil) }
        }
    }
}
