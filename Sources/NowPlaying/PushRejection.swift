#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Why a push was refused; each maps to one HTTP status and a `reason` in the
/// response body, the way APNs answers (`{"reason": "BadDeviceToken"}`).
public struct PushRejection: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// No `Authorization: Bearer` token.
        case missingToken = "MissingProviderToken"
        /// The token is not the push-to-start token (start) or a session's update token.
        case invalidToken = "InvalidProviderToken"
        /// The body is not the expected JSON.
        case malformedPayload = "BadPayload"
        case payloadTooLarge = "PayloadTooLarge"
        /// No registered extension for the topic, or the topic is ambiguous.
        case badTopic = "BadTopic"
        /// Update or end for a session that is not (or no longer) active.
        case unknownSession = "UnknownSession"
        /// The attributes' id is not the id of the session the token belongs to.
        case idMismatch = "IdMismatch"
        /// Start for an id that is already active.
        case sessionExists = "SessionExists"
        /// The timestamp is older than the session's last event.
        case staleTimestamp = "StaleTimestamp"
        /// The extension could not produce or update the session.
        case extensionFailed = "ExtensionFailed"
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String = "") {
        self.code = code
        self.message = message
    }

    /// The HTTP status the push endpoint answers with.
    public var httpStatus: Int {
        switch code {
        case .missingToken: 401
        case .invalidToken: 403
        case .malformedPayload, .badTopic, .idMismatch: 400
        case .payloadTooLarge: 413
        case .unknownSession: 404
        case .sessionExists, .staleTimestamp: 409
        case .extensionFailed: 500
        }
    }

    public var description: String { message.isEmpty ? code.rawValue : "\(code.rawValue): \(message)" }
}
