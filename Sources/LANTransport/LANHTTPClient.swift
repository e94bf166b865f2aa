public import Logging
public import NIOCore
import NIOHTTP1
public import NIOPosix
public import Transport

/// A small HTTP/1.1 client on swift-nio for talking to LAN devices: one
/// connection per request, every read bounded, redirects only to the same host.
public struct LANHTTPClient: Sendable {
    private let group: any EventLoopGroup
    private let logger: Logger

    public init(group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, logger: Logger = Logger(label: "mediaroute.http")) {
        self.group = group
        self.logger = logger
    }

    /// Sends one request to `host:port` and reads the answer.
    /// - Throws: ``TransportError``: `unreachable`/`connectionRefused` to connect,
    ///   `timedOut`, `malformedMessage` for a bad or too large answer, `connectionLost`.
    public func request(
        _ method: String, host: String, port: UInt16, path: String, headers: [(String, String)] = [], body: [UInt8] = [],
        limits: HTTPLimits = HTTPLimits()
    ) async throws(TransportError) -> HTTPResponse {
        var current = path
        var redirects = 0
        while true {
            let response = try await once(method, host: host, port: port, path: current, headers: headers, body: body, limits: limits)
            guard [301, 302, 303, 307, 308].contains(response.status), let location = response[header: "location"] else { return response }
            guard redirects < limits.maximumRedirects else {
                throw TransportError(.malformedMessage, "more than \(limits.maximumRedirects) redirects from \(host)")
            }
            redirects += 1
            if location.hasPrefix("/") {
                current = location
            } else {
                // Only to the same host and port: a device may not send us elsewhere.
                let prefix = "http://\(host.contains(":") ? "[\(host)]" : host)"
                let candidates = [prefix + ":\(port)/", port == 80 ? prefix + "/" : nil].compactMap { $0 }
                guard let base = candidates.first(where: { location.lowercased().hasPrefix($0.lowercased()) }) else {
                    logger.warning("redirect off the device's host refused", metadata: ["from": "\(host):\(port)", "to": "\(location.prefix(120))"])
                    throw TransportError(.malformedMessage, "redirect from \(host) to another host refused")
                }
                current = "/" + location.dropFirst(base.count)
            }
        }
    }

    /// An IP literal directly; a name through the resolver (NIO's resolver costs a thread
    /// hop even for literals, and device URLs are nearly always literals).
    private static func address(_ host: String, _ port: UInt16) throws -> SocketAddress {
        if let literal = try? SocketAddress(ipAddress: host, port: Int(port)) { return literal }
        return try SocketAddress.makeAddressResolvingHost(host, port: Int(port))
    }

    private func once(
        _ method: String, host: String, port: UInt16, path: String, headers: [(String, String)], body: [UInt8], limits: HTTPLimits
    ) async throws(TransportError) -> HTTPResponse {
        let loop = group.next()
        let promise = loop.makePromise(of: HTTPResponse.self)
        let limit = limits.maximumBodyBytes
        var head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: method), uri: path)
        head.headers.add(name: "Host", value: port == 80 ? host : "\(host.contains(":") ? "[\(host)]" : host):\(port)")
        head.headers.add(name: "Connection", value: "close")
        head.headers.add(name: "User-Agent", value: "Linux UPnP/1.1 MediaRoute/0.1")
        for (name, value) in headers { head.headers.add(name: name, value: value) }
        if !body.isEmpty || method == "POST" { head.headers.add(name: "Content-Length", value: String(body.count)) }
        let address: SocketAddress
        do {
            address = try Self.address(host, port)
        } catch {
            throw TransportError(.unreachable, "\(host): \(error)")
        }
        // The request is written from the event loop as soon as the connection is up, and only
        // the answer comes back to the caller's task: one hop per request instead of three.
        let request = head
        let connection = ClientBootstrap(group: loop)
            .connectTimeout(TimeAmount(limits.timeout))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(ResponseCollector(limit: limit, promise: promise, request: request, body: body))
                }
            }
            .connect(to: address)
        connection.whenFailure { error in
            if case ChannelError.connectTimeout = error {
                promise.fail(TransportError(.timedOut, "connecting to \(host):\(port)"))
            } else {
                let refused = "\(error)".contains("refused")
                promise.fail(TransportError(refused ? .connectionRefused : .unreachable, "\(host):\(port): \(error)"))
            }
        }
        let timeout = loop.scheduleTask(in: TimeAmount(limits.timeout)) {
            promise.fail(TransportError(.timedOut, "\(method) \(path) on \(host):\(port) took longer than \(limits.timeout)"))
            connection.whenSuccess { $0.close(promise: nil) }
        }
        defer {
            timeout.cancel()
            connection.whenSuccess { $0.close(promise: nil) }
        }
        do {
            return try await promise.futureResult.get()
        } catch let error as TransportError {
            throw error
        } catch {
            throw TransportError(.connectionLost, "\(method) \(path) on \(host):\(port): \(error)")
        }
    }
}
