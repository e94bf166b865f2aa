import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Transport

/// What a device may cost us per request.
public struct HTTPLimits: Sendable, Hashable {
    /// Largest body read; a longer one fails the request.
    public var maximumBodyBytes: Int
    /// From connect to the last byte.
    public var timeout: Duration
    /// Redirects followed (only to the same host and port).
    public var maximumRedirects: Int

    public init(maximumBodyBytes: Int = 256 * 1024, timeout: Duration = .seconds(5), maximumRedirects: Int = 2) {
        self.maximumBodyBytes = maximumBodyBytes
        self.timeout = timeout
        self.maximumRedirects = maximumRedirects
    }
}
