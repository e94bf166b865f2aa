import HTTPServing
import LANTransport
import Logging
import Synchronization
internal import UPnP

/// One GENA event as it arrived: the subscription, its sequence number, the body.
struct GENAEvent: Sendable {
    var sid: String
    var seq: Int
    var body: [UInt8]
}

/// What our HTTP servers answer: GENA `NOTIFY` to `/gena/TOKEN` and media to
/// `/media/TOKEN/NAME` (``ServedFiles``). Tokens are 128 random bits; nothing else is served.
final class CallbackRoutes: Sendable {
    private let events = Mutex<[String: (continuation: AsyncStream<GENAEvent>.Continuation, allowedHost: String)]>([:])
    /// Files handed to renderers.
    let files = ServedFiles()

    /// DLNA renderers want to be told the file streams and may be seeked by bytes.
    static let dlnaHeaders = [
        ("transferMode.dlna.org", "Streaming"), ("contentFeatures.dlna.org", "DLNA.ORG_OP=01;DLNA.ORG_FLAGS=01700000000000000000000000000000"),
    ]

    /// A callback path for events from `allowedHost` (the renderer) only.
    func addEvents(_ continuation: AsyncStream<GENAEvent>.Continuation, from allowedHost: String) -> String {
        let token = ServedFiles.token()
        events.withLock { $0[token] = (continuation, allowedHost) }
        return token
    }

    func removeEvents(_ token: String) { events.withLock { _ = $0.removeValue(forKey: token) } }

    func handle(_ request: HTTPServerRequest) -> HTTPServerResponse {
        if let served = files.response(to: request) { return served }
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: true)
        guard parts.count >= 2 else { return HTTPServerResponse(status: 404) }
        let token = String(parts[1])
        switch (parts[0], request.method) {
        case ("gena", "NOTIFY"):
            guard let (continuation, allowedHost) = events.withLock({ $0[token] }) else { return HTTPServerResponse(status: 412) }
            guard request.remoteHost == allowedHost else { return HTTPServerResponse(status: 403) }
            guard request[header: "nt"] == "upnp:event", request[header: "nts"] == "upnp:propchange" else { return HTTPServerResponse(status: 400) }
            guard let sid = request[header: "sid"], let seq = request[header: "seq"].flatMap({ Int($0) }), seq >= 0 else {
                return HTTPServerResponse(status: 412)
            }
            continuation.yield(GENAEvent(sid: sid, seq: seq, body: request.body))
            return HTTPServerResponse(status: 200)
        case ("gena", _):
            return HTTPServerResponse(status: 405)
        default:
            return HTTPServerResponse(status: 404)
        }
    }
}

/// The HTTP servers facing renderers, one per local address, started on first use.
struct CallbackServers: Sendable {
    let routes: CallbackRoutes
    let pool: HTTPServerPool

    init(logger: Logger) {
        let routes = CallbackRoutes()
        self.routes = routes
        pool = HTTPServerPool(logger: logger) { routes.handle($0) }
    }

    /// `http://ADDRESS:PORT` of the server on `address`.
    func base(on address: String) async throws(HTTPServerError) -> String { try await pool.base(on: address) }

    func closeAll() async { await pool.closeAll() }
}
