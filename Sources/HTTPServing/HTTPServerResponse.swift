#if canImport(Glibc)
import Glibc
#endif
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// What to answer.
public struct HTTPServerResponse: Sendable {
    /// Where the body comes from.
    public enum Body: Sendable {
        case bytes([UInt8])
        /// A byte range of a file (read in chunks as the peer takes them); `total` is the file size.
        /// Opened without following a link; with `identity`, only that very file is sent.
        case file(path: String, range: ClosedRange<Int>?, total: Int, identity: FileIdentity? = nil)
        /// A byte range of a file a client handed over as a descriptor (read with `pread` on a duplicate).
        case descriptor(OpenFile, range: ClosedRange<Int>?, total: Int)
        /// Bytes produced while the response is sent (a live stream), framed as `framing` says;
        /// the response ends when the body ends or the peer goes. Once its head is sent it is
        /// held to no deadline but the idle timeout (a peer that stops reading is closed then).
        case live(any HTTPLiveBody, framing: HTTPLiveFraming)
    }

    public var status: Int
    public var headers: [(String, String)]
    public var body: Body

    public init(status: Int, headers: [(String, String)] = [], body: Body = .bytes([])) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}
