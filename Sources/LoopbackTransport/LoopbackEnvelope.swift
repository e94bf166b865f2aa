#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The message format spoken between the loopback extension and a simulated device.
///
/// Each message is one JSON object: an optional request id (echoed in the
/// reply; absent on device-initiated events) and a body.
public struct LoopbackEnvelope<Body: Codable & Sendable>: Codable, Sendable {
    public var id: UInt32?
    public var body: Body

    public init(id: UInt32?, body: Body) {
        self.id = id
        self.body = body
    }

    /// The envelope as message bytes.
    public func encoded() -> [UInt8] {
        // Encoding plain enums and structs of strings and numbers cannot fail.
        (try? Array(JSONEncoder().encode(self))) ?? []
    }

    /// An envelope decoded from message bytes, or nil for a malformed message.
    public static func decode(_ bytes: [UInt8]) -> LoopbackEnvelope? {
        try? JSONDecoder().decode(LoopbackEnvelope.self, from: Data(bytes))
    }
}
