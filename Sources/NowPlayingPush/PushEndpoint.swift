#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
import HTTPServing
public import Logging
public import NIOCore
public import NIOPosix
public import NowPlaying

/// The box's push endpoint: `POST /nowplaying` with a push payload
/// (`{"aps": {"event", "timestamp", "attributes"}}`) and `Authorization: Bearer
/// <token>`, applied to a ``NowPlayingCenter``.
///
/// Like APNs, an optional `apns-topic` header names the extension (needed only
/// when several are registered) and `apns-push-type`, when present, must be
/// `nowplaying`. Answers are JSON: `200 {"session": …, "updateToken": …}` (the
/// token only for `start`), or an error status with `{"reason": …, "message": …}`
/// (see ``PushRejection/httpStatus``). It runs on the box's one HTTP server
/// (``HTTPServer``, as the UPnP callbacks do): bodies over the center's limit are
/// refused from their `Content-Length` before they are read, and a connection idle
/// for ``Configuration/idleTimeout`` is closed.
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
    private let server: HTTPServer
    private let center: NowPlayingCenter
    private let logger: Logger

    private init(server: HTTPServer, center: NowPlayingCenter, logger: Logger) {
        self.server = server
        self.localPort = Int(server.port)
        self.center = center
        self.logger = logger
    }

    /// Binds the listening socket and serves (``run()`` waits until it is closed).
    public static func bind(
        _ configuration: Configuration = Configuration(), center: NowPlayingCenter,
        logger: Logger = Logger(label: "mediaroute.push"), group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> PushEndpoint {
        guard let port = UInt16(exactly: configuration.port) else {
            throw HTTPServerError(description: "\(configuration.port) is not a TCP port")
        }
        let responder = PushResponder(center: center, logger: logger)
        let server = try await HTTPServer(
            host: configuration.host, port: port, maximumRequestBytes: center.maximumPushSize, answersOversizedRequests: true,
            idleTimeout: configuration.idleTimeout,
            // Every local app is 127.0.0.1: one cap for them all, well above what the box's apps
            // open (the benchmark's 64 included) and far below the daemon's descriptor limit.
            limits: HTTPServerLimits(maximumConnections: 96, maximumConnectionsPerHost: 96),
            group: group, logger: logger
        ) { request in
            await responder.respond(to: request)
        }
        logger.info("push endpoint listening", metadata: ["address": "\(configuration.host):\(server.port)"])
        return PushEndpoint(server: server, center: center, logger: logger)
    }

    /// Serves until the task is cancelled or ``close()`` is called.
    public func run() async {
        let server = self.server
        await withTaskCancellationHandler {
            await server.waitUntilClosed()
        } onCancel: {
            Task { await server.close() }
        }
        logger.debug("push endpoint stopped")
    }

    /// Stops accepting connections; ``run()`` returns.
    public func close() {
        let server = self.server
        Task { await server.close() }
    }
}

/// Turns one push request into the center's answer, as JSON.
private struct PushResponder: Sendable {
    let center: NowPlayingCenter
    let logger: Logger

    func respond(to request: HTTPServerRequest) async -> HTTPServerResponse {
        func failure(_ status: Int, _ reason: String, _ message: String = "") -> HTTPServerResponse {
            json(status, ["reason": reason, "message": message])
        }
        let path = request.path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.path
        guard path == PushEndpoint.path else { return failure(404, "BadPath", "POST \(PushEndpoint.path)") }
        guard request.method == "POST" else { return failure(405, "MethodNotAllowed", "use POST") }
        if request.bodyTooLarge {
            let rejection = PushRejection(.payloadTooLarge, "limit is \(center.maximumPushSize) bytes")
            return failure(rejection.httpStatus, rejection.code.rawValue, rejection.message)
        }
        if let pushType = request[header: "apns-push-type"], pushType != "nowplaying" {
            return failure(400, "InvalidPushType", "apns-push-type must be nowplaying")
        }
        var bearer: String?
        if let authorization = request[header: "authorization"] {
            let parts = authorization.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "bearer" { bearer = String(parts[1].drop { $0 == " " }) }
        }
        do {
            let accepted = try await center.handlePush(body: request.body, bearerToken: bearer, topic: request[header: "apns-topic"])
            var answer = ["session": accepted.sessionID, "event": accepted.event.rawValue]
            if let token = accepted.updateToken { answer["updateToken"] = token.hex }
            return json(200, answer)
        } catch {
            logger.notice("push refused", metadata: ["reason": "\(error.code.rawValue)", "message": "\(error.message)"])
            return failure(error.httpStatus, error.code.rawValue, error.message)
        }
    }

    private func json(_ status: Int, _ object: [String: String]) -> HTTPServerResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let data = (try? encoder.encode(object)) ?? Data("{}".utf8)
        return HTTPServerResponse(status: status, headers: [("Content-Type", "application/json")], body: .bytes(Array(data)))
    }
}
