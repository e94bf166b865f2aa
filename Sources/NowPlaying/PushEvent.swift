#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The event of a push payload (`aps.event`).
public enum PushEventKind: String, Sendable, Hashable, Codable {
    case start
    case update
    case end
}

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

/// What an accepted push did.
public struct PushAcceptance: Sendable, Hashable {
    public var event: PushEventKind
    public var sessionID: String
    /// For `start`: the new session's update token, for the sender to use next.
    public var updateToken: PushToken?
}

/// The envelope `{"aps": {"event", "timestamp", "attributes"}}`.
package struct PushEnvelope<Attributes: Decodable>: Decodable {
    package struct APS: Decodable {
        package var event: PushEventKind
        package var timestamp: Double
        package var attributes: Attributes
    }

    var aps: APS
}

/// The part of the attributes every event has.
package struct PushSessionID: Decodable {
    package var id: String
}

package enum PushPayload {
    package static func decode<Attributes: Decodable>(_ type: Attributes.Type, from body: [UInt8]) throws(PushRejection) -> PushEnvelope<Attributes>.APS {
        do {
            let aps = try decoder.decode(PushEnvelope<Attributes>.self, from: Data(body)).aps
            guard aps.timestamp.isFinite, aps.timestamp >= 0 else {
                throw PushRejection(.malformedPayload, "timestamp must be seconds since 1970")
            }
            return aps
        } catch let rejection as PushRejection {
            throw rejection
        } catch let error as DecodingError {
            throw PushRejection(.malformedPayload, describe(error))
        } catch {
            throw PushRejection(.malformedPayload, "not JSON")
        }
    }

    /// Dates in attributes as ISO 8601 text (the seeds' payloads) or seconds since 1970.
    static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            if let seconds = try? container.decode(Double.self), seconds.isFinite {
                return Date(timeIntervalSince1970: seconds)
            }
            let text = try container.decode(String.self)
            if let date = try? Date.ISO8601FormatStyle().parse(text) { return date }
            if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) { return date }
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an ISO 8601 date")
        }
        return decoder
    }

    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            let prefix = path(context)
            return "missing \(prefix.isEmpty ? "" : prefix + ".")\(key.stringValue)"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "wrong type at \(path(context))"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "not JSON" : "bad value at \(path(context))"
        @unknown default:
            return "undecodable"
        }
    }
}
