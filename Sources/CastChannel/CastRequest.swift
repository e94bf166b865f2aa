#if canImport(FoundationEssentials)
internal import FoundationEssentials
#else
internal import Foundation
#endif

/// A request a sender sends: its namespace and its JSON. Requests that expect an answer
/// carry a request id the answer repeats.
public enum CastRequest: Sendable, Equatable {
    case connect
    case close
    case ping
    case pong
    case getReceiverStatus(requestID: Int)
    case launch(appID: String, requestID: Int)
    case stopApplication(sessionID: String, requestID: Int)
    /// A level (0–1), a mute, or both.
    case setVolume(level: Double?, muted: Bool?, requestID: Int)
    case load(CastMediaItem, sessionID: String, autoplay: Bool, currentTime: Double, requestID: Int)
    case play(mediaSessionID: Int, requestID: Int)
    case pause(mediaSessionID: Int, requestID: Int)
    case stopMedia(mediaSessionID: Int, requestID: Int)
    case seek(mediaSessionID: Int, to: Double, requestID: Int)
    case getMediaStatus(mediaSessionID: Int?, requestID: Int)
    case queueInsert([CastMediaItem], mediaSessionID: Int, requestID: Int)

    public var namespace: String {
        switch self {
        case .connect, .close: CastNamespace.connection
        case .ping, .pong: CastNamespace.heartbeat
        case .getReceiverStatus, .launch, .stopApplication, .setVolume: CastNamespace.receiver
        case .load, .play, .pause, .stopMedia, .seek, .getMediaStatus, .queueInsert: CastNamespace.media
        }
    }

    /// The id its answer carries, nil for messages that get none.
    public var requestID: Int? {
        switch self {
        case .connect, .close, .ping, .pong: nil
        case .getReceiverStatus(let id), .launch(_, let id), .stopApplication(_, let id), .setVolume(_, _, let id),
            .load(_, _, _, _, let id), .play(_, let id), .pause(_, let id), .stopMedia(_, let id), .seek(_, _, let id),
            .getMediaStatus(_, let id), .queueInsert(_, _, let id):
            id
        }
    }

    /// The JSON payload (keys sorted, so equal requests are equal bytes).
    public func json() -> String {
        let body: WireRequest
        switch self {
        case .connect: body = WireRequest(type: "CONNECT")
        case .close: body = WireRequest(type: "CLOSE")
        case .ping: body = WireRequest(type: "PING")
        case .pong: body = WireRequest(type: "PONG")
        case .getReceiverStatus(let id): body = WireRequest(type: "GET_STATUS", requestId: id)
        case .launch(let appID, let id):
            body = WireRequest(type: "LAUNCH", requestId: id, appId: appID)
        case .stopApplication(let sessionID, let id):
            body = WireRequest(type: "STOP", requestId: id, sessionId: sessionID)
        case .setVolume(let level, let muted, let id):
            let finite = level.map { $0.isFinite ? min(max($0, 0), 1) : 0 }
            body = WireRequest(type: "SET_VOLUME", requestId: id, volume: WireVolume(level: finite, muted: muted))
        case .load(let item, let sessionID, let autoplay, let currentTime, let id):
            body = WireRequest(
                type: "LOAD", requestId: id, sessionId: sessionID, media: item.wire, autoplay: autoplay,
                currentTime: currentTime.isFinite ? max(currentTime, 0) : 0)
        case .play(let media, let id): body = WireRequest(type: "PLAY", requestId: id, mediaSessionId: media)
        case .pause(let media, let id): body = WireRequest(type: "PAUSE", requestId: id, mediaSessionId: media)
        case .stopMedia(let media, let id): body = WireRequest(type: "STOP", requestId: id, mediaSessionId: media)
        case .seek(let media, let time, let id):
            body = WireRequest(type: "SEEK", requestId: id, mediaSessionId: media, currentTime: time.isFinite ? max(time, 0) : 0)
        case .getMediaStatus(let media, let id): body = WireRequest(type: "GET_STATUS", requestId: id, mediaSessionId: media)
        case .queueInsert(let items, let media, let id):
            body = WireRequest(type: "QUEUE_INSERT", requestId: id, mediaSessionId: media, items: items.map { WireQueueItem(media: $0.wire, autoplay: true) })
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Every field is a string, number or bool of finite value: encoding cannot fail.
        return (try? encoder.encode(body)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// The message to `destination` from `source`.
    public func envelope(from source: String, to destination: String) -> CastEnvelope {
        CastEnvelope(sourceID: source, destinationID: destination, namespace: namespace, json: json())
    }
}

struct WireRequest: Encodable {
    var type: String
    var requestId: Int?
    var appId: String?
    var sessionId: String?
    var volume: WireVolume?
    var mediaSessionId: Int?
    var media: WireMedia?
    var autoplay: Bool?
    var currentTime: Double?
    var items: [WireQueueItem]?

    init(
        type: String, requestId: Int? = nil, appId: String? = nil, sessionId: String? = nil, volume: WireVolume? = nil, mediaSessionId: Int? = nil,
        media: WireMedia? = nil, autoplay: Bool? = nil, currentTime: Double? = nil, items: [WireQueueItem]? = nil
    ) {
        self.type = type
        self.requestId = requestId
        self.appId = appId
        self.sessionId = sessionId
        self.volume = volume
        self.mediaSessionId = mediaSessionId
        self.media = media
        self.autoplay = autoplay
        self.currentTime = currentTime
        self.items = items
    }
}

struct WireVolume: Encodable {
    var level: Double?
    var muted: Bool?
}

struct WireMedia: Encodable {
    var contentId: String
    var contentType: String
    var streamType: String
    var metadata: WireMetadata?
    var duration: Double?
}

struct WireMetadata: Encodable {
    var metadataType: Int
    var title: String?
    var subtitle: String?
    var artist: String?
    var albumName: String?
    var images: [WireImage]?
}

struct WireImage: Encodable {
    var url: String
}

struct WireQueueItem: Encodable {
    var media: WireMedia
    var autoplay: Bool
}
