#if canImport(Glibc)
import Glibc
#endif
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A request made to us: a device's GENA `NOTIFY` or media fetch, a local app's push.
public struct HTTPServerRequest: Sendable {
    public var method: String
    public var path: String
    /// Header fields by lower-cased name.
    public var headers: [String: String]
    public var body: [UInt8]
    /// The peer's IP address.
    public var remoteHost: String?
    /// The body was over the server's limit and was not read (``body`` is empty). Only a
    /// server made with `answersOversizedRequests: true` passes such a request on, for the
    /// handler to answer in its own terms; the connection is closed after the answer.
    public var bodyTooLarge: Bool

    public init(
        method: String, path: String, headers: [String: String] = [:], body: [UInt8] = [], remoteHost: String? = nil, bodyTooLarge: Bool = false
    ) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.remoteHost = remoteHost
        self.bodyTooLarge = bodyTooLarge
    }

    public subscript(header name: String) -> String? { headers[name.lowercased()] }
}
