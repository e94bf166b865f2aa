

/// A transport-level failure, typed so that extensions can map it to a device error.
public struct TransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public enum Code: String, Sendable, Hashable, Codable {
        /// The endpoint is not (or no longer) reachable.
        case unreachable
        /// The device refused the connection.
        case connectionRefused
        /// An open connection was lost.
        case connectionLost
        /// The connection was closed by us.
        case closed
        /// Discovery failed (adapter off, interface down, permission).
        case discoveryFailed
        /// The transport cannot run on this machine (missing kernel support, no bus).
        case unavailable
        /// A message was malformed or too large.
        case malformedMessage
        /// An operation took longer than allowed.
        case timedOut
        /// Pairing failed: a wrong code, or the person or the device said no.
        case authenticationFailed
        /// The device or this transport cannot do what was asked (a codec, an operation).
        case unsupported
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
