#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An app's handle on a remote session it started: update it as the external
/// device's state changes, make it primary, end it.
public struct RemoteMediaSession<Attributes: RemoteMediaSessionAttributes>: Sendable {
    public let id: String
    public let center: NowPlayingCenter

    /// Starts a session; the extension registered for `Attributes` produces its representation.
    public static func start(attributes: Attributes, in center: NowPlayingCenter = .shared) async throws(RemoteMediaSessionError) -> Self {
        try await center.start(attributes: attributes)
        return RemoteMediaSession(id: attributes.id, center: center)
    }

    /// The active sessions of this attributes type.
    public static func activeSessions(in center: NowPlayingCenter = .shared) async -> [Self] {
        let topics = await center.topics(for: Attributes.self)
        return await center.sessions.filter { topics.contains($0.topic) }.map { RemoteMediaSession(id: $0.sessionID, center: center) }
    }

    /// The topic's push-to-start token (nil until an extension for `Attributes` is registered).
    public static func pushToStartToken(in center: NowPlayingCenter = .shared) async -> PushToken? {
        guard let topic = await center.topics(for: Attributes.self).first else { return nil }
        return await center.pushToStartToken(topic: topic)
    }

    /// Push-to-start token changes, starting with the current token.
    public static func pushToStartTokenUpdates(in center: NowPlayingCenter = .shared) async -> AsyncStream<PushToken> {
        guard let topic = await center.topics(for: Attributes.self).first else { return AsyncStream { $0.finish() } }
        return await center.pushToStartTokenUpdates(topic: topic)
    }

    /// Sends new attributes; their id must be this session's.
    public func update(_ attributes: Attributes) async throws(RemoteMediaSessionError) {
        try await center.update(sessionID: id, attributes: attributes)
    }

    /// Removes the session from Now Playing.
    public func end() async throws(RemoteMediaSessionError) {
        try await center.end(sessionID: id)
    }

    /// Asks for this session to be the one Now Playing surfaces show.
    public func requestToBecomeSystemPrimary() async throws(RemoteMediaSessionError) {
        try await center.requestToBecomeSystemPrimary(sessionID: id)
    }

    /// This session's update token, for a server to send update and end pushes.
    public var pushToken: PushToken? {
        get async { await center.pushToken(forSession: id) }
    }

    /// Update token changes, starting with the current token.
    public var pushTokenUpdates: AsyncStream<PushToken> {
        get async { await center.pushTokenUpdates(forSession: id) }
    }
}

extension NowPlayingCenter {
    func topics<Attributes: RemoteMediaSessionAttributes>(for type: Attributes.Type) -> [String] {
        topicsForType(ObjectIdentifier(type))
    }
}
