#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import Logging
import EventBroadcast

/// The box's Now Playing: every remote session, which one is primary, their
/// commands and devices, and the push tokens that let a server start and update
/// sessions.
///
/// Extensions register here; apps start sessions with ``RemoteMediaSession``,
/// servers with push events (``handlePush(body:bearerToken:topic:)``), and the
/// routing system publishes one for every URL session it plays. Surfaces (the
/// MPRIS bridge, the daemon's D-Bus API) follow ``events()`` and send commands
/// with ``perform(_:onSession:)``.
///
/// Operations on one session run in the order they were accepted, even when
/// the extension's code suspends: an update accepted after another is applied
/// and published after it.
public actor NowPlayingCenter {
    /// The center apps use when they name none.
    public static let shared = NowPlayingCenter()

    /// Largest push body accepted, in bytes.
    public nonisolated let maximumPushSize: Int

    private struct RegisteredExtension {
        let topic: String
        let acceptsPushes: Bool
        let attributesType: ObjectIdentifier
        let decode: @Sendable ([UInt8]) throws(PushRejection) -> (any RemoteMediaSessionAttributes, PushEventKind, Double)
        let make: @Sendable (any RemoteMediaSessionAttributes) async throws -> SessionBox
    }

    /// A representable with its type erased.
    struct SessionBox: Sendable {
        let update: @Sendable (any RemoteMediaSessionAttributes) async -> Bool
        let read: @Sendable () async -> Reading
        let changes: @Sendable () -> AsyncStream<Void>
    }

    struct Reading: Sendable {
        var content: (any MediaContentRepresentable)?
        var playback: MediaPlaybackSnapshot?
        var commands: [MediaCommand]
        var devices: [RemoteMediaDevice]
        var languageOptions: MediaLanguageOptions
    }

    private struct Entry {
        let id: String
        let topic: String
        let box: SessionBox
        let order: UInt64
        var reading: Reading
        var info: NowPlayingInfo
        var token: PushToken
        var lastEvent: Date
        var tail: Task<Void, Never>?
        var watcher: Task<Void, Never>?
    }

    private let logger: Logger
    private let now: @Sendable () -> Date
    private var extensions: [String: RegisteredExtension] = [:]
    private var startTokens: [String: PushToken] = [:]
    private var entries: [String: Entry] = [:]
    /// Tokens of sessions that ended recently, so a late push gets "unknown session", not "invalid token".
    private var retiredTokens: [(token: PushToken, id: String)] = []
    private var primaryID: String?
    private var nextOrder: UInt64 = 0
    private let observers = EventBroadcaster<NowPlayingEvent>(bufferingPolicy: .bufferingNewest(1024))

    public init(
        maximumPushSize: Int = 64 * 1024, logger: Logger = Logger(label: "mediaroute.nowplaying"),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.maximumPushSize = maximumPushSize
        self.logger = logger
        self.now = now
    }

    // MARK: Extensions

    /// Registers an extension under its configuration's topic and creates the topic's push-to-start token.
    /// - Throws: ``RemoteMediaSessionError/Code/sessionAlreadyExists`` when the topic is taken.
    public func register<Extension: RemoteMediaSessionExtension>(_ ext: Extension) throws(RemoteMediaSessionError) {
        let configuration = ext.configuration
        let topic = configuration.topic
        guard extensions[topic] == nil else {
            throw RemoteMediaSessionError(.sessionAlreadyExists, "an extension is registered for topic \(topic)")
        }
        extensions[topic] = RegisteredExtension(
            topic: topic,
            acceptsPushes: configuration.acceptsPushes,
            attributesType: ObjectIdentifier(Extension.Attributes.self),
            decode: { body throws(PushRejection) in
                let header = try PushPayload.decode(PushSessionID.self, from: body)
                if header.event == .end {
                    // An end needs only the id; full attributes are optional.
                    return (EndAttributes(id: header.attributes.id), .end, header.timestamp)
                }
                let aps = try PushPayload.decode(Extension.Attributes.self, from: body)
                return (aps.attributes, aps.event, aps.timestamp)
            },
            make: { attributes in
                guard let typed = attributes as? Extension.Attributes else {
                    throw RemoteMediaSessionError(.invalidAttributes, "attributes are not \(Extension.Attributes.self)")
                }
                let session = try await configuration.extension.session(typed)
                return Self.box(session)
            })
        if configuration.acceptsPushes { rotatePushToStartToken(topic: topic) }
    }

    private static func box<Session: RemoteMediaSessionRepresentable>(_ session: Session) -> SessionBox {
        SessionBox(
            update: { attributes in
                guard let typed = attributes as? Session.Attributes else { return false }
                await session.update(typed)
                return true
            },
            read: {
                Reading(
                    content: await session.content, playback: await session.playbackSnapshot,
                    commands: await session.commands, devices: await session.devices,
                    languageOptions: await session.languageOptions)
            },
            changes: { session.changes() })
    }

    public var registeredTopics: [String] { extensions.keys.sorted() }

    func topicsForType(_ type: ObjectIdentifier) -> [String] {
        extensions.values.filter { $0.attributesType == type }.map(\.topic).sorted()
    }

    // MARK: Observation

    /// Every change from now on, starting with the sessions already active and the primary.
    public func events() -> AsyncStream<NowPlayingEvent> {
        let current = entries.values.sorted(by: { $0.order < $1.order }).map { NowPlayingEvent.sessionStarted($0.info) }
        return observers.subscribe(startingWith: current + [.primaryChanged(sessionID: primaryID)])
    }

    private func publish(_ event: NowPlayingEvent) {
        observers.yield(event)
    }

    /// The active sessions, oldest first.
    public var sessions: [NowPlayingInfo] {
        entries.values.sorted { $0.order < $1.order }.map(\.info)
    }

    public func session(_ id: String) -> NowPlayingInfo? { entries[id]?.info }

    /// The session Now Playing surfaces show.
    public var primarySessionID: String? { primaryID }

    public var primarySession: NowPlayingInfo? { primaryID.flatMap { entries[$0]?.info } }

    // MARK: Sessions (app side: RemoteMediaSession calls these)

    /// Starts a session through the extension registered for the attributes' type.
    public func start<Attributes: RemoteMediaSessionAttributes>(attributes: Attributes) async throws(RemoteMediaSessionError) {
        let type = ObjectIdentifier(Attributes.self)
        let matching = extensions.values.filter { $0.attributesType == type }
        guard let registered = matching.first, matching.count == 1 else {
            throw RemoteMediaSessionError(
                .extensionNotFound, matching.isEmpty ? "no extension for \(Attributes.self)" : "several extensions for \(Attributes.self)")
        }
        try await start(attributes, with: registered, at: now())
    }

    private func start(_ attributes: any RemoteMediaSessionAttributes, with registered: RegisteredExtension, at time: Date) async throws(RemoteMediaSessionError) {
        let id = attributes.id
        guard !id.isEmpty else { throw RemoteMediaSessionError(.invalidAttributes, "empty id") }
        guard entries[id] == nil else { throw RemoteMediaSessionError(.sessionAlreadyExists, id) }
        // Reserve the id while the extension builds the session, so a second start fails at once.
        let placeholder = Reading(content: nil, playback: nil, commands: [], devices: [], languageOptions: MediaLanguageOptions())
        let box: SessionBox
        nextOrder += 1
        let order = nextOrder
        entries[id] = Entry(
            id: id, topic: registered.topic, box: SessionBox(update: { _ in false }, read: { placeholder }, changes: { AsyncStream { $0.finish() } }),
            order: order, reading: placeholder, info: NowPlayingInfo(sessionID: id, topic: registered.topic),
            token: PushToken.random(), lastEvent: time, tail: nil, watcher: nil)
        do {
            box = try await registered.make(attributes)
        } catch {
            entries.removeValue(forKey: id)
            if let error = error as? RemoteMediaSessionError { throw error }
            throw RemoteMediaSessionError(.extensionFailed, "\(error)")
        }
        let reading = await box.read()
        guard var entry = entries[id], entry.order == order else { return }  // ended while starting
        entry = Entry(
            id: id, topic: registered.topic, box: box, order: order, reading: reading,
            info: Self.info(id: id, topic: registered.topic, reading: reading), token: entry.token,
            lastEvent: entry.lastEvent, tail: nil, watcher: nil)
        let changes = box.changes()
        entry.watcher = Task { [weak self] in
            for await _ in changes { await self?.refresh(id, order: order) }
        }
        entries[id] = entry
        logger.info("remote session started", metadata: ["session": "\(id)", "topic": "\(registered.topic)"])
        publish(.sessionStarted(entry.info))
        publish(.pushTokenChanged(topic: registered.topic, sessionID: id, token: entry.token))
        if primaryID == nil { setPrimary(id) }
    }

    /// Updates a session with new attributes; their id must be `sessionID`.
    public func update(sessionID: String, attributes: any RemoteMediaSessionAttributes) async throws(RemoteMediaSessionError) {
        guard attributes.id == sessionID else {
            throw RemoteMediaSessionError(.idMismatch, "attributes id \(attributes.id) for session \(sessionID)")
        }
        guard let entry = entries[sessionID] else { throw RemoteMediaSessionError(.sessionNotFound, sessionID) }
        let time = max(entry.lastEvent, now())
        entries[sessionID]?.lastEvent = time
        await enqueue(sessionID) { center, box in
            guard await box.update(attributes) else { return }
            await center.refresh(sessionID, order: nil)
        }
    }

    /// Ends a session: it leaves Now Playing and its update token stops working.
    public func end(sessionID: String) async throws(RemoteMediaSessionError) {
        guard entries[sessionID] != nil else { throw RemoteMediaSessionError(.sessionNotFound, sessionID) }
        await enqueue(sessionID) { center, _ in await center.remove(sessionID) }
    }

    /// Makes the session the one Now Playing surfaces show.
    public func requestToBecomeSystemPrimary(sessionID: String) throws(RemoteMediaSessionError) {
        guard entries[sessionID] != nil else { throw RemoteMediaSessionError(.sessionNotFound, sessionID) }
        setPrimary(sessionID)
    }

    private func setPrimary(_ id: String?) {
        guard primaryID != id else { return }
        primaryID = id
        publish(.primaryChanged(sessionID: id))
    }

    private func remove(_ id: String) {
        guard let entry = entries.removeValue(forKey: id) else { return }
        entry.watcher?.cancel()
        retiredTokens.append((entry.token, id))
        if retiredTokens.count > 256 { retiredTokens.removeFirst(retiredTokens.count - 256) }
        logger.info("remote session ended", metadata: ["session": "\(id)"])
        publish(.sessionEnded(sessionID: id))
        if primaryID == id {
            setPrimary(entries.values.max { $0.order < $1.order }?.id)
        }
    }

    /// Runs `work` after everything already queued for the session, and waits for it.
    private func enqueue(_ id: String, _ work: @escaping @Sendable (NowPlayingCenter, SessionBox) async -> Void) async {
        guard let entry = entries[id] else { return }
        let previous = entry.tail
        let box = entry.box
        let task = Task {
            await previous?.value
            await work(self, box)
        }
        entries[id]?.tail = task
        await task.value
    }

    /// Reads the representable again and publishes the result when it is still the same session.
    private func refresh(_ id: String, order: UInt64?) async {
        guard let box = entries[id]?.box else { return }
        let reading = await box.read()
        guard var entry = entries[id], order == nil || entry.order == order else { return }
        let previous = entry.info
        entry.reading = reading
        entry.info = Self.info(id: id, topic: entry.topic, reading: reading)
        entries[id] = entry
        publish(.sessionUpdated(entry.info, previous: previous))
    }

    private static func info(id: String, topic: String, reading: Reading) -> NowPlayingInfo {
        NowPlayingInfo(
            sessionID: id, topic: topic, content: reading.content, playback: reading.playback,
            commands: reading.commands.map(\.descriptor), devices: reading.devices.map(\.descriptor),
            languageOptions: reading.languageOptions)
    }

    // MARK: Commands

    /// Sends a command to a session (nil: the primary one) and returns its handler's status.
    ///
    /// A disabled or unregistered command never reaches the handler. A toggle
    /// without its own handler becomes play or pause by the current state; a
    /// language option outside the content's groups is `noSuchContent`;
    /// disabling one whose group needs a selection fails.
    public func perform(_ request: MediaCommandRequest, onSession sessionID: String? = nil) async -> MediaCommandStatus {
        guard let id = sessionID ?? primaryID, let entry = entries[id] else { return .noActionableNowPlayingItem }
        var request = request
        let commands = entry.reading.commands
        func enabled(_ kind: MediaCommand.Kind) -> MediaCommand? { commands.first { $0.kind == kind && $0.isEnabled } }
        if case .togglePlayPause = request, enabled(.togglePlayPause) == nil {
            request = entry.reading.playback?.state.isPlaying == true ? .pause : .play
        }
        switch request {
        case .seekToPosition(let value), .skipForward(let value), .skipBackward(let value):
            guard value.isFinite, value >= 0 || request.kind == .seekToPosition else { return .commandFailed }
            if case .seekToPosition = request, value < 0 { request = .seekToPosition(0) }
        case .changePlaybackRate(let rate):
            guard rate.isFinite, rate >= 0 else { return .commandFailed }
        case .enableLanguageOption(let option):
            guard entry.reading.languageOptions.group(containing: option) != nil else { return .noSuchContent }
        case .disableLanguageOption(let option):
            guard let group = entry.reading.languageOptions.group(containing: option) else { return .noSuchContent }
            guard group.allowsEmptySelection, entry.reading.languageOptions.current.contains(option) else { return .commandFailed }
        default:
            break
        }
        guard let command = enabled(request.kind) else { return .commandDisabled }
        let status: MediaCommandStatus
        do {
            status = try await command.handler(request)
        } catch {
            logger.notice("remote command failed", metadata: ["session": "\(id)", "command": "\(request.kind)", "error": "\(error)"])
            status = .commandFailed
        }
        await enqueue(id) { center, _ in await center.refresh(id, order: nil) }
        return status
    }

    /// Sets a device's absolute volume (clamped to 0.0–1.0) in a session (nil: the primary one).
    public func setVolume(_ level: Float, device deviceID: String, onSession sessionID: String? = nil) async -> MediaCommandStatus {
        guard level.isFinite else { return .commandFailed }
        guard let id = sessionID ?? primaryID, let entry = entries[id] else { return .noActionableNowPlayingItem }
        guard let device = entry.reading.devices.first(where: { $0.id == deviceID }) else { return .deviceNotFound }
        for case .absoluteVolume(_, let onChange) in device.capabilities {
            do {
                try await onChange(min(max(level, 0), 1))
            } catch {
                return .commandFailed
            }
            await enqueue(id) { center, _ in await center.refresh(id, order: nil) }
            return .success
        }
        return .commandDisabled
    }

    /// Steps a device's volume up (positive) or down (negative) by `steps`.
    public func changeVolume(by steps: Int, device deviceID: String, onSession sessionID: String? = nil) async -> MediaCommandStatus {
        guard let id = sessionID ?? primaryID, let entry = entries[id] else { return .noActionableNowPlayingItem }
        guard let device = entry.reading.devices.first(where: { $0.id == deviceID }) else { return .deviceNotFound }
        for case .relativeVolume(let up, let down) in device.capabilities {
            do {
                for _ in 0..<abs(steps) { try await (steps > 0 ? up : down)() }
            } catch {
                return .commandFailed
            }
            await enqueue(id) { center, _ in await center.refresh(id, order: nil) }
            return .success
        }
        return .commandDisabled
    }

    // MARK: Push tokens

    /// The topic's current push-to-start token.
    public func pushToStartToken(topic: String) -> PushToken? { startTokens[topic] }

    /// Replaces the topic's push-to-start token; the old one stops working at once.
    @discardableResult
    public func rotatePushToStartToken(topic: String) -> PushToken {
        let token = PushToken.random()
        startTokens[topic] = token
        publish(.pushTokenChanged(topic: topic, sessionID: nil, token: token))
        return token
    }

    /// The session's update token (for update and end pushes).
    public func pushToken(forSession id: String) -> PushToken? { entries[id]?.token }

    /// Replaces the session's update token.
    @discardableResult
    public func rotatePushToken(forSession id: String) throws(RemoteMediaSessionError) -> PushToken {
        guard let entry = entries[id] else { throw RemoteMediaSessionError(.sessionNotFound, id) }
        let token = PushToken.random()
        entries[id]?.token = token
        publish(.pushTokenChanged(topic: entry.topic, sessionID: id, token: token))
        return token
    }

    /// Push-to-start token changes of a topic, starting with the current one.
    public func pushToStartTokenUpdates(topic: String) -> AsyncStream<PushToken> {
        tokenUpdates(topic: topic, sessionID: nil, current: startTokens[topic])
    }

    /// Update token changes of a session, starting with the current one; ends with the session.
    public func pushTokenUpdates(forSession id: String) -> AsyncStream<PushToken> {
        tokenUpdates(topic: entries[id]?.topic ?? "", sessionID: id, current: entries[id]?.token)
    }

    private func tokenUpdates(topic: String, sessionID: String?, current: PushToken?) -> AsyncStream<PushToken> {
        let events = self.events()
        return AsyncStream { continuation in
            if let current { continuation.yield(current) }
            let task = Task {
                for await event in events {
                    switch event {
                    case .pushTokenChanged(let eventTopic, let eventSession, let token) where eventTopic == topic && eventSession == sessionID:
                        if token != current { continuation.yield(token) }
                    case .sessionEnded(let ended) where ended == sessionID:
                        continuation.finish()
                        return
                    default:
                        continue
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    // MARK: Push events

    /// Applies a push event `{"aps": {"event", "timestamp", "attributes"}}`.
    ///
    /// `start` must carry the topic's push-to-start token; `update` and `end` the
    /// session's update token. Every check happens before anything changes, so
    /// a refused push leaves the center as it was.
    /// - Parameters:
    ///   - topic: the extension's topic; may be nil when exactly one extension is registered.
    public func handlePush(body: [UInt8], bearerToken: String?, topic: String?) async throws(PushRejection) -> PushAcceptance {
        guard body.count <= maximumPushSize else { throw PushRejection(.payloadTooLarge, "limit is \(maximumPushSize) bytes") }
        guard let bearerToken, !bearerToken.isEmpty else { throw PushRejection(.missingToken) }
        let registered: RegisteredExtension
        let pushable = extensions.values.filter(\.acceptsPushes)
        if let topic {
            guard let match = pushable.first(where: { $0.topic == topic }) else { throw PushRejection(.badTopic, "no extension takes pushes for topic \(topic)") }
            registered = match
        } else {
            guard pushable.count == 1, let only = pushable.first else {
                throw PushRejection(.badTopic, pushable.isEmpty ? "no extension takes pushes" : "name the topic (apns-topic)")
            }
            registered = only
        }
        let presented = Array(bearerToken.utf8)
        let (attributes, event, seconds) = try registered.decode(body)
        let timestamp = Date(timeIntervalSince1970: seconds)
        let id = attributes.id
        switch event {
        case .start:
            guard let token = startTokens[registered.topic], token.hexMatches(presented) else { throw PushRejection(.invalidToken) }
            guard entries[id] == nil else { throw PushRejection(.sessionExists, id) }
            do {
                try await start(attributes, with: registered, at: timestamp)
            } catch {
                throw error.code == .sessionAlreadyExists ? PushRejection(.sessionExists, id) : PushRejection(.extensionFailed, error.description)
            }
            return PushAcceptance(event: .start, sessionID: id, updateToken: entries[id]?.token)
        case .update, .end:
            let owner = entries.values.first { $0.token.hexMatches(presented) && $0.topic == registered.topic }
            guard let owner else {
                if retiredTokens.contains(where: { $0.token.hexMatches(presented) }) { throw PushRejection(.unknownSession, "the session has ended") }
                throw PushRejection(.invalidToken)
            }
            guard owner.id == id else {
                throw entries[id] == nil ? PushRejection(.unknownSession, id) : PushRejection(.idMismatch, "the token belongs to another session")
            }
            // Push timestamps are whole seconds: compare at that resolution.
            guard seconds.rounded(.down) >= owner.lastEvent.timeIntervalSince1970.rounded(.down) else {
                throw PushRejection(.staleTimestamp, "older than the session's last event")
            }
            entries[id]?.lastEvent = max(owner.lastEvent, timestamp)
            if event == .end {
                await enqueue(id) { center, _ in await center.remove(id) }
                return PushAcceptance(event: .end, sessionID: id, updateToken: nil)
            }
            await enqueue(id) { center, box in
                guard await box.update(attributes) else { return }
                await center.refresh(id, order: nil)
            }
            return PushAcceptance(event: .update, sessionID: id, updateToken: nil)
        }
    }
}

/// The attributes of an `end` push: only the id.
private struct EndAttributes: RemoteMediaSessionAttributes {
    var id: String
}

extension PushToken {
    /// Whether `presented` is this token's hex spelling (either case), compared in constant time.
    func hexMatches(_ presented: [UInt8]) -> Bool {
        guard presented.count == 64 else { return false }
        let lowered = presented.map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "F") ? $0 + 32 : $0 }
        return PushToken(bytes: Array(hex.utf8)).matches(lowered)
    }
}
