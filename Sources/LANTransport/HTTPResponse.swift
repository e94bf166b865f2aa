import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Transport

/// An HTTP answer, with its body read in full (within the limit).
public struct HTTPResponse: Sendable, Hashable {
    public var status: Int
    /// Header fields by lower-cased name (repeated fields joined with `, `).
    public var headers: [String: String]
    public var body: [UInt8]

    public init(status: Int, headers: [String: String] = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public subscript(header name: String) -> String? { headers[name.lowercased()] }
}
