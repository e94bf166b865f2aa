#if canImport(FoundationEssentials)
internal import FoundationEssentials
#else
internal import Foundation
#endif

/// A message from a receiver, decoded by its namespace and `type`.
public enum CastReply: Sendable, Equatable {
    /// The receiver (or an application) closed our virtual connection.
    case close
    case ping
    case pong
    case receiverStatus(CastReceiverStatus, requestID: Int?)
    /// `LAUNCH_ERROR` with its reason (`NOT_FOUND`, `NOT_ALLOWED`…).
    case launchError(reason: String?, requestID: Int?)
    case mediaStatus([CastMediaStatus], requestID: Int?)
    /// `LOAD_FAILED` or `LOAD_CANCELLED`.
    case loadFailed(type: String, reason: String?, requestID: Int?)
    /// `INVALID_REQUEST`, `INVALID_PLAYER_STATE` and other refusals, with their type.
    case refused(type: String, reason: String?, requestID: Int?)
    /// A message of a known namespace whose type MediaRoute does not act on.
    case unhandled(namespace: String, type: String)
    /// A message in an application's own namespace: handed on as it is.
    case application(namespace: String, payload: CastEnvelope.Payload)

    public var requestID: Int? {
        switch self {
        case .receiverStatus(_, let id), .launchError(_, let id), .mediaStatus(_, let id), .loadFailed(_, _, let id), .refused(_, _, let id): id
        case .close, .ping, .pong, .unhandled, .application: nil
        }
    }

    /// Decodes `envelope`.
    /// - Throws: ``CastChannelError/Code/invalidPayload`` when a control namespace's payload
    ///   is not JSON of the shape its type has (a binary one, a status without its fields).
    public static func decode(_ envelope: CastEnvelope) throws(CastChannelError) -> CastReply {
        let platform = [CastNamespace.connection, CastNamespace.heartbeat, CastNamespace.receiver, CastNamespace.media]
        guard platform.contains(envelope.namespace) else {
            return .application(namespace: envelope.namespace, payload: envelope.payload)
        }
        guard let text = envelope.text else {
            throw CastChannelError(.invalidPayload, "a binary payload in \(envelope.namespace)")
        }
        let bytes = Array(text.utf8)
        let header: Header = try decodeJSON(Header.self, bytes, envelope.namespace)
        let id = header.requestId.flatMap { $0 == 0 ? nil : $0 }
        switch (envelope.namespace, header.type) {
        case (CastNamespace.connection, "CLOSE"): return .close
        case (CastNamespace.heartbeat, "PING"): return .ping
        case (CastNamespace.heartbeat, "PONG"): return .pong
        case (CastNamespace.receiver, "RECEIVER_STATUS"):
            return .receiverStatus(try decodeJSON(ReceiverStatusBody.self, bytes, envelope.namespace).status, requestID: id)
        case (CastNamespace.receiver, "LAUNCH_ERROR"):
            return .launchError(reason: header.reason, requestID: id)
        case (CastNamespace.media, "MEDIA_STATUS"):
            return .mediaStatus(try decodeJSON(MediaStatusBody.self, bytes, envelope.namespace).status, requestID: id)
        case (CastNamespace.media, "LOAD_FAILED"), (CastNamespace.media, "LOAD_CANCELLED"):
            return .loadFailed(type: header.type, reason: header.reason ?? header.detailedErrorCode.map(String.init), requestID: id)
        case (_, "INVALID_REQUEST"), (_, "INVALID_PLAYER_STATE"), (_, "INVALID_MEDIA_SESSION_ID"), (_, "LAUNCH_ERROR"):
            return .refused(type: header.type, reason: header.reason, requestID: id)
        default:
            return .unhandled(namespace: envelope.namespace, type: String(header.type.prefix(64)))
        }
    }

    private static func decodeJSON<T: Decodable>(_ type: T.Type, _ bytes: [UInt8], _ namespace: String) throws(CastChannelError) -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(bytes))
        } catch {
            throw CastChannelError(.invalidPayload, "\(namespace): not a \(T.self): \(String(describing: error).prefix(200))")
        }
    }

    private struct Header: Decodable {
        var type: String
        var requestId: Int?
        var reason: String?
        var detailedErrorCode: Int?

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            type = try container.decode(String.self, forKey: .type)
            // Some receivers send ids as floats, or null: anything that is no whole number is none.
            requestId = (try? container.decodeIfPresent(Int.self, forKey: .requestId)) ?? nil
            reason = (try? container.decodeIfPresent(String.self, forKey: .reason)) ?? nil
            detailedErrorCode = (try? container.decodeIfPresent(Int.self, forKey: .detailedErrorCode)) ?? nil
        }

        enum Keys: String, CodingKey {
            case type, requestId, reason, detailedErrorCode
        }
    }

    private struct ReceiverStatusBody: Decodable {
        var status: CastReceiverStatus
    }

    private struct MediaStatusBody: Decodable {
        var status: [CastMediaStatus]
    }
}
