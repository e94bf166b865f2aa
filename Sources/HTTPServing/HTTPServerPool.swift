public import Logging

/// One ``HTTPServer`` per local address, started when first asked for and all answering
/// with one handler: devices fetch from the address that faces them.
public actor HTTPServerPool {
    /// One server per address; a start in progress is shared by concurrent callers (the
    /// actor is reentrant across the bind), so no address gets two servers.
    private var servers: [String: Task<HTTPServer, any Error>] = [:]
    private let handler: HTTPServer.Handler
    private let logger: Logger

    public init(logger: Logger, handler: @escaping HTTPServer.Handler) {
        self.logger = logger
        self.handler = handler
    }

    /// `http://ADDRESS:PORT` of the server on `address`, started if need be.
    /// - Throws: ``HTTPServerError`` when it cannot listen there (the next call tries again).
    public func base(on address: String) async throws(HTTPServerError) -> String {
        let start: Task<HTTPServer, any Error>
        if let existing = servers[address] {
            start = existing
        } else {
            let handler = self.handler
            let logger = self.logger
            start = Task {
                try await HTTPServer(host: address, logger: logger) { request in
                    let response = await handler(request)
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
            servers[address] = nil
            throw (error as? HTTPServerError) ?? HTTPServerError(description: "cannot serve on \(address): \(error)")
        }
    }

    /// Closes every server.
    public func closeAll() async {
        for start in servers.values { await (try? start.value)?.close() }
        servers = [:]
    }
}
