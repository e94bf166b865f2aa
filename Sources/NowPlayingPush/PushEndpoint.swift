#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NowPlaying

/// The box's push endpoint: `POST /nowplaying` with a push payload
/// (`{"aps": {"event", "timestamp", "attributes"}}`) and `Authorization: Bearer
/// <token>`, applied to a ``NowPlayingCenter``.
///
/// Like APNs, an optional `apns-topic` header names the extension (needed only
/// when several are registered) and `apns-push-type`, when present, must be
/// `nowplaying`. Answers are JSON: `200 {"session": …, "updateToken": …}` (the
/// token only for `start`), or an error status with `{"reason": …, "message": …}`
/// (see ``PushRejection/httpStatus``). Bodies over the center's limit are refused
/// from their `Content-Length` before they are read; a connection idle for
/// ``Configuration/idleTimeout`` is closed.
public final class PushEndpoint: Sendable {
    /// Where and how the endpoint listens.
    public struct Configuration: Sendable {
        /// Address to bind; loopback by default so only local processes reach it.
        public var host: String
        /// Port to bind; 0 picks a free one (see ``PushEndpoint/localPort``).
        public var port: Int
        /// Time a connection may stay silent, mid-request or between requests.
        public var idleTimeout: Duration

        public init(host: String = "127.0.0.1", port: Int = 7390, idleTimeout: Duration = .seconds(10)) {
            self.host = host
            self.port = port
            self.idleTimeout = idleTimeout
        }
    }

    /// The request path.
    public static let path = "/nowplaying"

    public let localPort: Int
    private let server: NIOAsyncChannel<NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, Never>
    private let center: NowPlayingCenter
    private let logger: Logger

    private init(
        server: NIOAsyncChannel<NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, Never>, localPort: Int,
        center: NowPlayingCenter, logger: Logger
    ) {
        self.server = server
        self.localPort = localPort
        self.center = center
        self.logger = logger
    }

    /// Binds the listening socket (serve with ``run()``).
    public static func bind(
        _ configuration: Configuration = Configuration(), center: NowPlayingCenter,
        logger: Logger = Logger(label: "mediaroute.push"), group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> PushEndpoint {
        let idle = TimeAmount.nanoseconds(Int64(configuration.idleTimeout.components.seconds) * 1_000_000_000
            + configuration.idleTimeout.components.attoseconds / 1_000_000_000)
        let server = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .bind(host: configuration.host, port: configuration.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(IdleStateHandler(allTimeout: idle))
                    try channel.pipeline.syncOperations.addHandler(CloseWhenIdle())
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    return try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(wrappingChannelSynchronously: channel)
                }
            }
        let port = server.channel.localAddress?.port ?? configuration.port
        logger.info("push endpoint listening", metadata: ["address": "\(configuration.host):\(port)"])
        return PushEndpoint(server: server, localPort: port, center: center, logger: logger)
    }

    /// Serves connections until the task is cancelled or ``close()`` is called.
    public func run() async {
        do {
            try await withThrowingDiscardingTaskGroup { group in
                try await server.executeThenClose { inbound in
                    for try await connection in inbound {
                        group.addTask { await self.serve(connection) }
                    }
                }
            }
        } catch {
            logger.debug("push endpoint stopped", metadata: ["error": "\(error)"])
        }
    }

    /// Stops accepting connections; ``run()`` returns once the open ones close.
    public func close() {
        server.channel.close(promise: nil)
    }

    private func serve(_ connection: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>) async {
        let limit = center.maximumPushSize
        do {
            try await connection.executeThenClose { inbound, outbound in
                var head: HTTPRequestHead?
                var body: [UInt8] = []
                var tooLarge = false
                for try await part in inbound {
                    switch part {
                    case .head(let requestHead):
                        head = requestHead
                        body.removeAll(keepingCapacity: true)
                        tooLarge = requestHead.headers.first(name: "content-length").flatMap(Int.init).map { $0 > limit } ?? false
                    case .body(var buffer):
                        guard !tooLarge else { continue }
                        if body.count + buffer.readableBytes > limit {
                            tooLarge = true
                            body.removeAll()
                        } else {
                            body.append(contentsOf: buffer.readBytes(length: buffer.readableBytes) ?? [])
                        }
                    case .end:
                        guard let request = head else { continue }
                        let (status, json) = await respond(to: request, body: body, tooLarge: tooLarge)
                        try await write(status: status, json: json, keepAlive: request.isKeepAlive && !tooLarge, version: request.version, to: outbound)
                        if tooLarge || !request.isKeepAlive { return }
                        head = nil
                    }
                }
            }
        } catch {
            logger.debug("push connection ended", metadata: ["error": "\(error)"])
        }
    }

    private func respond(to head: HTTPRequestHead, body: [UInt8], tooLarge: Bool) async -> (HTTPResponseStatus, [String: String]) {
        func failure(_ status: HTTPResponseStatus, _ reason: String, _ message: String = "") -> (HTTPResponseStatus, [String: String]) {
            (status, ["reason": reason, "message": message])
        }
        let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
        guard path == Self.path else { return failure(.notFound, "BadPath", "POST \(Self.path)") }
        guard head.method == .POST else { return failure(.methodNotAllowed, "MethodNotAllowed", "use POST") }
        if tooLarge {
            let rejection = PushRejection(.payloadTooLarge, "limit is \(center.maximumPushSize) bytes")
            return failure(HTTPResponseStatus(statusCode: rejection.httpStatus), rejection.code.rawValue, rejection.message)
        }
        if let pushType = head.headers.first(name: "apns-push-type"), pushType != "nowplaying" {
            return failure(.badRequest, "InvalidPushType", "apns-push-type must be nowplaying")
        }
        var bearer: String?
        if let authorization = head.headers.first(name: "authorization") {
            let parts = authorization.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "bearer" { bearer = String(parts[1].drop { $0 == " " }) }
        }
        do {
            let accepted = try await center.handlePush(body: body, bearerToken: bearer, topic: head.headers.first(name: "apns-topic"))
            var json = ["session": accepted.sessionID, "event": accepted.event.rawValue]
            if let token = accepted.updateToken { json["updateToken"] = token.hex }
            return (.ok, json)
        } catch {
            logger.notice("push refused", metadata: ["reason": "\(error.code.rawValue)", "message": "\(error.message)"])
            return failure(HTTPResponseStatus(statusCode: error.httpStatus), error.code.rawValue, error.message)
        }
    }

    private func write(
        status: HTTPResponseStatus, json: [String: String], keepAlive: Bool, version: HTTPVersion,
        to outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>
    ) async throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let data = (try? encoder.encode(json)) ?? Data("{}".utf8)
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: "application/json")
        headers.add(name: "content-length", value: "\(data.count)")
        headers.add(name: "connection", value: keepAlive ? "keep-alive" : "close")
        try await outbound.write(.head(HTTPResponseHead(version: version, status: status, headers: headers)))
        try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: data))))
        try await outbound.write(.end(nil))
    }
}

/// Closes a connection when the idle handler says it has been silent too long.
private final class CloseWhenIdle: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }
}
