#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Errors of the remote session API.
public struct RemoteMediaSessionError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// No session with that id is active.
        case sessionNotFound
        /// A session with that id is already active.
        case sessionAlreadyExists
        /// An update carried attributes whose id differs from the session's.
        case idMismatch
        /// No extension is registered for the attributes' type or topic.
        case extensionNotFound
        /// The extension could not produce a session.
        case extensionFailed
        /// The attributes could not be encoded or decoded.
        case invalidAttributes
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String = "") {
        self.code = code
        self.message = message
    }

    public var description: String { message.isEmpty ? code.rawValue : "\(code.rawValue): \(message)" }
}
