#if canImport(Glibc)
import Glibc
#endif
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

/// A file handed to a session, served to one renderer.
struct ServedFile: Sendable {
    var path: String
    var mimeType: String
    /// Only this host may fetch it (the renderer).
    var allowedHost: String
}

/// What our HTTP servers answer: GENA `NOTIFY` to `/gena/TOKEN` and media to
/// `/media/TOKEN/NAME`. Tokens are 128 random bits; nothing else is served.
final class CallbackRoutes: Sendable {
    private let events = Mutex<[String: (continuation: AsyncStream<GENAEvent>.Continuation, allowedHost: String)]>([:])
    private let files = Mutex<[String: ServedFile]>([:])

    static func token() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in
            let value = generator.next() as UInt64
            let hex = String(value, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }

    /// A callback path for events from `allowedHost` (the renderer) only.
    func addEvents(_ continuation: AsyncStream<GENAEvent>.Continuation, from allowedHost: String) -> String {
        let token = Self.token()
        events.withLock { $0[token] = (continuation, allowedHost) }
        return token
    }

    func removeEvents(_ token: String) { events.withLock { _ = $0.removeValue(forKey: token) } }

    func addFile(_ file: ServedFile) -> String {
        let token = Self.token()
        files.withLock { $0[token] = file }
        return token
    }

    func removeFile(_ token: String) { files.withLock { _ = $0.removeValue(forKey: token) } }

    var servedFileCount: Int { files.withLock { $0.count } }

    func handle(_ request: HTTPServerRequest) -> HTTPServerResponse {
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
        case ("media", "GET"), ("media", "HEAD"):
            guard parts.count == 3, let file = files.withLock({ $0[token] }) else { return HTTPServerResponse(status: 404) }
            guard request.remoteHost == file.allowedHost else { return HTTPServerResponse(status: 403) }
            return Self.serve(file, range: request[header: "range"])
        case ("gena", _), ("media", _):
            return HTTPServerResponse(status: 405)
        default:
            return HTTPServerResponse(status: 404)
        }
    }

    static func serve(_ file: ServedFile, range: String?) -> HTTPServerResponse {
        var info = stat()
        guard stat(file.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return HTTPServerResponse(status: 404) }
        let total = Int(info.st_size)
        var headers: [(String, String)] = [
            ("Content-Type", file.mimeType), ("Accept-Ranges", "bytes"), ("transferMode.dlna.org", "Streaming"),
            ("contentFeatures.dlna.org", "DLNA.ORG_OP=01;DLNA.ORG_FLAGS=01700000000000000000000000000000"),
        ]
        guard let range else { return HTTPServerResponse(status: 200, headers: headers, body: .file(path: file.path, range: nil, total: total)) }
        guard let span = ByteRange.parse(range, total: total) else {
            headers.append(("Content-Range", "bytes */\(total)"))
            return HTTPServerResponse(status: 416, headers: headers)
        }
        headers.append(("Content-Range", "bytes \(span.lowerBound)-\(span.upperBound)/\(total)"))
        return HTTPServerResponse(status: 206, headers: headers, body: .file(path: file.path, range: span, total: total))
    }
}

/// A `Range: bytes=…` header with one range (renderers seek with `bytes=N-`).
package enum ByteRange {
    /// The satisfiable span, or nil (answer 416).
    package static func parse(_ header: String, total: Int) -> ClosedRange<Int>? {
        let text = header.trimmedXMLSpace.lowercased()
        guard text.hasPrefix("bytes="), total > 0 else { return nil }
        let spec = text.dropFirst(6)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
        let first = spec[..<dash]
        let last = spec[spec.index(after: dash)...]
        if first.isEmpty {
            guard let suffix = Int(last), suffix > 0 else { return nil }
            return max(total - suffix, 0)...(total - 1)
        }
        guard let start = Int(first), start >= 0, start < total else { return nil }
        if last.isEmpty { return start...(total - 1) }
        guard let end = Int(last), end >= start else { return nil }
        return start...min(end, total - 1)
    }
}

/// The HTTP servers, one per local address facing renderers, started on first use.
actor CallbackServers {
    let routes = CallbackRoutes()
    /// One server per address; a start in progress is shared by concurrent callers
    /// (the actor is reentrant across the bind), so no address gets two servers.
    private var servers: [String: Task<HTTPServer, any Error>] = [:]
    private let logger: Logger

    init(logger: Logger) { self.logger = logger }

    /// `http://ADDRESS:PORT` of the server on `address`.
    func base(on address: String) async throws(MediaDeviceErrorBox) -> String {
        let start: Task<HTTPServer, any Error>
        if let existing = servers[address] {
            start = existing
        } else {
            let routes = self.routes
            let logger = self.logger
            start = Task {
                try await HTTPServer(host: address, logger: logger) { request in
                    let response = routes.handle(request)
                    logger.debug("served", metadata: [
                        "request": "\(request.method) \(request.path.prefix(60))", "from": "\(request.remoteHost ?? "?")",
                        "status": "\(response.status)", "range": "\(request[header: "range"] ?? "-")",
                    ])
                    return response
                }
            }
            servers[address] = start
        }
        do {
            let server = try await start.value
            return "http://\(address):\(server.port)"
        } catch {
            servers[address] = nil  // the next session tries again
            throw MediaDeviceErrorBox(message: "cannot serve on \(address): \(error)")
        }
    }

    func closeAll() async {
        for start in servers.values { await (try? start.value)?.close() }
        servers = [:]
    }
}

/// A server that could not start (wrapped so the actor method has one error type).
struct MediaDeviceErrorBox: Error, Sendable {
    var message: String
}
