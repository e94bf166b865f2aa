#if canImport(FoundationEssentials)
internal import FoundationEssentials
#else
internal import Foundation
#endif

/// A receiver's volume, as its status reports it.
public struct CastVolume: Sendable, Equatable, Decodable {
    public var level: Double?
    public var muted: Bool?

    public init(level: Double? = nil, muted: Bool? = nil) {
        self.level = level
        self.muted = muted
    }
}

/// One application running on a receiver.
public struct CastApplication: Sendable, Equatable, Decodable {
    public struct Namespace: Sendable, Equatable, Decodable {
        public var name: String
    }

    public var appId: String
    public var displayName: String?
    /// What `STOP` names.
    public var sessionId: String
    /// The destination of the application's own messages (media, its namespace).
    public var transportId: String
    public var statusText: String?
    public var namespaces: [Namespace]?

    public init(appId: String, displayName: String? = nil, sessionId: String, transportId: String, statusText: String? = nil, namespaces: [String] = []) {
        self.appId = appId
        self.displayName = displayName
        self.sessionId = sessionId
        self.transportId = transportId
        self.statusText = statusText
        self.namespaces = namespaces.map(Namespace.init(name:))
    }
}

/// `RECEIVER_STATUS`: what runs on the receiver and its volume.
public struct CastReceiverStatus: Sendable, Equatable, Decodable {
    public var applications: [CastApplication]?
    public var volume: CastVolume?

    public init(applications: [CastApplication] = [], volume: CastVolume? = nil) {
        self.applications = applications
        self.volume = volume
    }

    /// The running application with session `sessionID`, if it still runs.
    public func application(session sessionID: String) -> CastApplication? {
        applications?.first { $0.sessionId == sessionID }
    }
}

/// What a media status says of the item.
public struct CastMediaInformation: Sendable, Equatable, Decodable {
    public struct Metadata: Sendable, Equatable, Decodable {
        public struct Image: Sendable, Equatable, Decodable {
            public var url: String
        }

        public var metadataType: Int?
        public var title: String?
        public var subtitle: String?
        public var artist: String?
        public var albumName: String?
        public var images: [Image]?
    }

    public var contentId: String?
    public var contentType: String?
    public var streamType: String?
    public var duration: Double?
    public var metadata: Metadata?
}

/// One media session's status (`MEDIA_STATUS` carries a list).
public struct CastMediaStatus: Sendable, Equatable, Decodable {
    public var mediaSessionId: Int
    /// `IDLE`, `LOADING`, `BUFFERING`, `PLAYING`, `PAUSED`.
    public var playerState: String
    public var currentTime: Double?
    public var playbackRate: Double?
    /// With `IDLE`: `FINISHED`, `CANCELLED`, `INTERRUPTED`, `ERROR`.
    public var idleReason: String?
    public var media: CastMediaInformation?
    public var volume: CastVolume?

    public init(
        mediaSessionId: Int, playerState: String, currentTime: Double? = nil, playbackRate: Double? = nil, idleReason: String? = nil,
        media: CastMediaInformation? = nil, volume: CastVolume? = nil
    ) {
        self.mediaSessionId = mediaSessionId
        self.playerState = playerState
        self.currentTime = currentTime
        self.playbackRate = playbackRate
        self.idleReason = idleReason
        self.media = media
        self.volume = volume
    }
}

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
