#if canImport(Glibc)
import Glibc
#endif
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// Why a server could not start.
public struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    public var description: String

    public init(description: String) {
        self.description = description
    }
}
