#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The state of an external device's playback that an app and its
/// ``RemoteMediaSessionExtension`` share: a `Codable` value with an `id`.
///
/// Include only what the extension needs to represent the device. The same
/// JSON arrives in push events (`{"aps": {"attributes": …}}`), so the coding
/// keys are the wire format of ``PushEndpointHandler``.
public protocol RemoteMediaSessionAttributes: Codable, Sendable {
    /// Identifies the session; every update must carry the id it started with.
    var id: String { get }
}

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
