import IPNetwork
import LANTransport
import Logging
import MediaClock
import MediaDevice
import RoutingModel
import Transport
internal import UPnP

/// What a running session tells its extension.
enum RendererSessionReport: Sendable {
    /// The session broke (device gone, watchdog); the extension reports `sessionFailed`.
    case failed(MediaDeviceError)
    /// The device changed its volume or mute (from an event).
    case volume(level: Float?, muted: Bool?)
}

/// One playback on one renderer: the URI set and played, GENA subscriptions
/// with renewal, position polling, commands from the ``PlaybackControl``, and
/// a watchdog for renderers that say PLAYING but do not play.
actor RendererSession {
    private struct Subscription {
        var kind: String
        var url: HTTPURL
        var sid: String
        var timeout: Int
        var nextSeq: Int = 0
    }

    let renderer: Renderer
    let session: MediaOutputSession
    let control: PlaybackControl
    private let configuration: UPnPRendererExtension.Configuration
    private let servers: CallbackServers
    private let report: @Sendable (RendererSessionReport) -> Void
    /// Where a live stream's renderer's positions go as each poll's answer comes (nil when it
    /// is not playing), with the poll's round trip (the renderer read its position within it):
    /// the stream follows the renderer's clock with them.
    private let positions: (@Sendable (Double?, Duration) -> Void)?
    /// Whether what the renderer plays has begun: a live stream started before its first samples
    /// keeps the renderer waiting, which the watchdog does not count as a stall.
    private let fed: (@Sendable () -> Bool)?
    private let logger: Logger
    private let clock: any HostClock

    private var subscriptions: [String: Subscription] = [:]
    private var eventToken: String?
    private var fileToken: String?
    /// Files queued with SetNextAVTransportURI, served until the session ends.
    private var queuedFileTokens: [String] = []
    private var callbackURL: String?
    private var tasks: [Task<Void, Never>] = []
    private var deviceState: TransportState?
    private var lastPosition: Double?
    /// When the position last moved (or playback began), on ``clock``.
    private var lastAdvance: Duration
    private var consecutiveFailures = 0
    private var finished = false
    /// Whether events arrive (the initial event came and renewals work); else state is polled.
    private(set) var eventsHealthy = false
    /// Events received (for tests).
    private(set) var eventCount = 0
    private(set) var renewals = 0

    init(
        renderer: Renderer, session: MediaOutputSession, control: PlaybackControl, configuration: UPnPRendererExtension.Configuration,
        servers: CallbackServers, clock: any HostClock, logger: Logger, fed: (@Sendable () -> Bool)? = nil,
        positions: (@Sendable (Double?, Duration) -> Void)? = nil, report: @escaping @Sendable (RendererSessionReport) -> Void
    ) {
        self.fed = fed
        self.positions = positions
        self.clock = clock
        self.lastAdvance = clock.now()
        self.renderer = renderer
        self.session = session
        self.control = control
        self.configuration = configuration
        self.servers = servers
        self.logger = logger
        self.report = report
    }

    private var client: RendererClient { renderer.client }

    /// Sets the URI with DIDL-Lite metadata, plays, reads the state once, and starts
    /// the loops; GENA subscriptions are made meanwhile (playback does not wait for them).
    /// `fileToken` is the served file this session owns (removed when it ends).
    /// `protocolInfo` is the sink the stream was made for (else the first the renderer lists for `mimeType`).
    func start(
        mediaURL: String, metadata described: PlaybackMetadata, mimeType: String, fileToken: String?, protocolInfo chosen: ProtocolInfo? = nil
    ) async throws(MediaDeviceError) {
        let title = described.title ?? mediaURL
        self.fileToken = fileToken
        let (events, sink) = AsyncStream.makeStream(of: GENAEvent.self)
        if configuration.usesEvents, let facing = renderer.endpoint.facts.interfaceAddress,
            case .ip(let host, _, _) = renderer.endpoint.address, let base = try? await servers.base(on: facing)
        {
            let token = servers.routes.addEvents(sink, from: host)
            eventToken = token
            callbackURL = "\(base)/gena/\(token)"
        }
        let protocolInfo = chosen ?? ProtocolInfo.match(mimeType, in: renderer.sinks) ?? ProtocolInfo(contentFormat: mimeType)
        if !renderer.sinks.isEmpty && ProtocolInfo.match(mimeType, in: renderer.sinks) == nil {
            logger.notice("\(renderer.device.displayName) lists no sink for \(mimeType); trying anyway")
        }
        let metadata = DIDLLite.item(
            title: title, url: mediaURL, protocolInfo: protocolInfo, duration: described.isLive ? nil : described.duration,
            artist: described.artist, album: described.album, artworkURL: described.artworkURL?.absoluteString)
        do {
            _ = try await client.call(AVTransportAction.setAVTransportURI(uri: mediaURL, metadata: metadata))
            _ = try await client.call(AVTransportAction.play())
        } catch {
            await end()
            throw error
        }
        control.update { snapshot in
            snapshot.state = .loading
            snapshot.metadata.title = title
            snapshot.metadata.artist = described.artist
            snapshot.metadata.album = described.album
            snapshot.metadata.artworkURL = described.artworkURL
            snapshot.metadata.isLive = described.isLive
            if let duration = described.duration, !described.isLive { snapshot.metadata.duration = duration }
        }
        await settle()
        // Subscribed once playback has settled: on a renderer like gmediarender, SUBSCRIBE and
        // its initial events compete with Play for the device's attention. Events that arrive
        // before their subscription's SID is known wait in the stream.
        tasks.append(Task {
            await self.subscribeAll()
            await self.consumeEvents(events)
        })
        lastAdvance = clock.now()
        tasks.append(Task { await self.consumeCommands() })
        tasks.append(Task { await self.poll() })
        tasks.append(Task { await self.renew() })
    }

    /// Queues the next URI where the renderer supports `SetNextAVTransportURI`.
    func setNext(mediaURL: String, title: String, mimeType: String, fileToken: String? = nil) async throws(MediaDeviceError) {
        guard renderer.supportsNextURI else {
            throw MediaDeviceError(.unsupported, "\(renderer.device.displayName) does not support SetNextAVTransportURI")
        }
        let protocolInfo = ProtocolInfo.match(mimeType, in: renderer.sinks) ?? ProtocolInfo(contentFormat: mimeType)
        let metadata = DIDLLite.item(title: title, url: mediaURL, protocolInfo: protocolInfo)
        _ = try await client.call(AVTransportAction.setNextAVTransportURI(uri: mediaURL, metadata: metadata))
        if let fileToken { queuedFileTokens.append(fileToken) }
    }

    /// Stops the device (unless it is gone), unsubscribes, stops serving, ends the loops.
    func stop(deviceGone: Bool = false) async {
        guard !finished else { return }
        if !deviceGone { _ = try? await client.call(AVTransportAction.stop) }
        await end(unsubscribe: !deviceGone)
    }

    private func end(unsubscribe: Bool = true) async {
        guard !finished else { return }
        finished = true
        for task in tasks { task.cancel() }
        tasks = []
        if unsubscribe {
            for subscription in subscriptions.values {
                _ = try? await client.fetch("UNSUBSCRIBE", subscription.url.description, headers: [("SID", subscription.sid)])
            }
        }
        subscriptions = [:]
        if let eventToken { servers.routes.removeEvents(eventToken) }
        if let fileToken { servers.routes.files.remove(fileToken) }
        for token in queuedFileTokens { servers.routes.files.remove(token) }
        queuedFileTokens = []
        eventToken = nil
        fileToken = nil
    }

    var isFinished: Bool { finished }
    var status: GENAStatus {
        GENAStatus(
            healthy: eventsHealthy, events: eventCount, renewals: renewals, subscriptions: subscriptions.mapValues(\.sid),
            granted: subscriptions.mapValues(\.timeout))
    }

    // MARK: GENA

    private func subscribeAll() async {
        guard let callbackURL else { return }
        let wanted = ["AVTransport", "RenderingControl"].compactMap { kind in
            renderer.description.service(kind)?.eventSubscriptionURL.map { (kind, $0) }
        }
        let results = await withTaskGroup(of: (String, HTTPURL, Result<(String, Int), MediaDeviceError>).self) { group in
            for (kind, url) in wanted {
                group.addTask {
                    do throws(MediaDeviceError) {
                        return (kind, url, .success(try await self.subscribe(url, headers: [("CALLBACK", "<\(callbackURL)>"), ("NT", "upnp:event")])))
                    } catch {
                        return (kind, url, .failure(error))
                    }
                }
            }
            var results: [(String, HTTPURL, Result<(String, Int), MediaDeviceError>)] = []
            for await result in group { results.append(result) }
            return results
        }
        for (kind, url, result) in results {
            switch result {
            case .success(let (sid, timeout)):
                guard !finished else {
                    _ = try? await client.fetch("UNSUBSCRIBE", url.description, headers: [("SID", sid)])
                    continue
                }
                subscriptions[kind] = Subscription(kind: kind, url: url, sid: sid, timeout: timeout)
                logger.debug("subscribed to \(kind) events", metadata: ["granted": "\(timeout) s"])
            case .failure(let error):
                logger.notice("no \(kind) events from \(renderer.device.displayName), polling instead: \(error)")
            }
        }
    }

    nonisolated private func subscribe(_ url: HTTPURL, headers: [(String, String)]) async throws(MediaDeviceError) -> (String, Int) {
        let response: HTTPResponse
        do {
            response = try await renderer.client.fetch(
                "SUBSCRIBE", url.description, headers: headers + [("TIMEOUT", "Second-\(configuration.subscriptionTimeout)")])
        } catch {
            throw RendererClient.deviceError(error, action: "SUBSCRIBE")
        }
        guard response.status == 200, let sid = response[header: "sid"], !sid.isEmpty, sid.count <= 256 else {
            throw MediaDeviceError(.sessionFailed, "SUBSCRIBE answered HTTP \(response.status)", protocolErrorCode: response.status)
        }
        return (sid, Self.grantedTimeout(response[header: "timeout"]) ?? configuration.subscriptionTimeout)
    }

    /// `Second-N` (or `infinite`, taken as 30 min) as seconds.
    static func grantedTimeout(_ header: String?) -> Int? {
        guard let header = header?.trimmedXMLSpace.lowercased() else { return nil }
        if header == "second-infinite" || header == "infinite" { return 1800 }
        guard header.hasPrefix("second-"), let seconds = Int(header.dropFirst(7)), seconds > 0 else { return nil }
        return min(seconds, 86_400)
    }

    /// Renews each subscription at half its granted time; a refused renewal
    /// (e.g. 412 after the device restarted) subscribes afresh; failing that, polls.
    private func renew() async {
        while !Task.isCancelled && !finished {
            let shortest = subscriptions.values.map(\.timeout).min() ?? configuration.subscriptionTimeout
            var interval = Duration.seconds(max(Double(shortest) / 2, 1))
            if let limit = configuration.maximumRenewalInterval { interval = min(interval, limit) }
            try? await clock.sleep(for: interval)
            guard !Task.isCancelled, !finished else { return }
            for (kind, subscription) in subscriptions {
                do {
                    let (_, timeout) = try await subscribe(subscription.url, headers: [("SID", subscription.sid)])
                    subscriptions[kind]?.timeout = timeout
                    renewals += 1
                } catch {
                    logger.notice("renewal of \(kind) events refused (\(error)); subscribing again")
                    subscriptions[kind] = nil
                    guard let callbackURL else { continue }
                    if let (sid, timeout) = try? await subscribe(subscription.url, headers: [("CALLBACK", "<\(callbackURL)>"), ("NT", "upnp:event")]) {
                        subscriptions[kind] = Subscription(kind: kind, url: subscription.url, sid: sid, timeout: timeout)
                    } else {
                        eventsHealthy = false
                    }
                }
            }
        }
    }

    private func consumeEvents(_ events: AsyncStream<GENAEvent>) async {
        for await event in events {
            guard !finished else { return }
            guard let kind = subscriptions.first(where: { $0.value.sid == event.sid })?.key else {
                logger.debug("event for an unknown subscription ignored")
                continue
            }
            let expected = subscriptions[kind]!.nextSeq
            if event.seq != expected && event.seq != 0 {
                logger.notice("events from \(kind) skipped \(expected)…\(event.seq - 1); reading the state again")
                await refreshTransportState()
            }
            subscriptions[kind]?.nextSeq = event.seq == UInt32.max ? 1 : event.seq + 1
            eventCount += 1
            eventsHealthy = true
            do {
                guard let change = try LastChange.parseNotify(event.body) else { continue }
                apply(change)
            } catch {
                logger.notice("malformed event from \(renderer.device.displayName) ignored: \(error)")
            }
        }
    }

    private func apply(_ change: LastChange) {
        if let state = change.transportState { applyState(state) }
        if change.volume != nil || change.mute != nil {
            let level = change.volume.map { renderer.level($0) }
            control.update { snapshot in
                if let level { snapshot.volume = level }
                if let mute = change.mute { snapshot.isMuted = mute }
            }
            report(.volume(level: level, muted: change.mute))
        }
        if let duration = change.currentTrackDuration, duration > 0 {
            control.update { $0.timeRange = 0...duration; $0.metadata.duration = duration }
        }
    }

    private func applyState(_ state: TransportState) {
        let previous = deviceState
        deviceState = state
        if state == .playing && previous != .playing { lastAdvance = clock.now() }
        // Stamped on the session's clock, the one its playback control extrapolates with.
        let now = clock.now()
        control.update { snapshot in
            switch state {
            case .playing:
                snapshot.state = .playing
                snapshot.playbackSpeed = 1
                snapshot.timestamp = now
            case .paused, .pausedRecording: snapshot.state = .paused
            case .transitioning: snapshot.state = .buffering
            case .stopped: snapshot.state = previous == .playing || snapshot.state == .ended ? .ended : .idle
            case .noMediaPresent: snapshot.state = .idle
            case .recording: snapshot.state = .playing
            }
        }
    }

    // MARK: Polling and the watchdog

    /// Reads the state right after Play, then again after 1, 2, 4 … ms, until the
    /// renderer has left STOPPED/TRANSITIONING (at most ``settleLimit``): renderers
    /// report PLAYING a few milliseconds after answering Play.
    private func settle() async {
        let deadline = clock.now() + Self.settleLimit
        var pause = Duration.milliseconds(1)
        while true {
            await refreshTransportState()
            guard !finished, deviceState == nil || deviceState == .stopped || deviceState == .transitioning || deviceState == .noMediaPresent,
                clock.now() < deadline
            else { return }
            try? await clock.sleep(for: pause)
            pause = min(pause * 2, .milliseconds(100))
        }
    }

    static let settleLimit = Duration.seconds(2)

    private func refreshTransportState() async {
        do {
            let info = try await client.call(AVTransportAction.getTransportInfo)
            consecutiveFailures = 0
            if let text = info["CurrentTransportState"], let state = TransportState(rawValue: text) { applyState(state) }
            if info["CurrentTransportStatus"] == "ERROR_OCCURRED" {
                fail(MediaDeviceError(.sessionFailed, "\(renderer.device.displayName) reports ERROR_OCCURRED"))
            }
        } catch {
            noteFailure(error)
        }
    }

    private func poll() async {
        while !Task.isCancelled && !finished {
            // A live stream's polls are dithered ±50 %: positions in whole seconds (gmediarender's)
            // polled in step with the renderer's seconds would show a sawtooth, not its rate.
            try? await clock.sleep(for: positions == nil ? configuration.pollInterval : configuration.pollInterval * Double.random(in: 0.5...1.5))
            guard !Task.isCancelled, !finished else { return }
            if !eventsHealthy { await refreshTransportState() }
            guard !finished, deviceState == .playing || deviceState == .transitioning || deviceState == .paused else {
                positions?(nil, .zero)
                continue
            }
            do {
                let asked = clock.now()
                let info = try await client.call(AVTransportAction.getPositionInfo)
                let roundTrip = clock.now() - asked
                consecutiveFailures = 0
                let position = info["RelTime"].flatMap(UPnPTime.parse)
                let duration = info["TrackDuration"].flatMap(UPnPTime.parse)
                positions?(deviceState == .playing ? position : nil, roundTrip)
                if let position {
                    if position != lastPosition { lastAdvance = clock.now() }
                    lastPosition = position
                    let now = clock.now()
                    control.update { snapshot in
                        snapshot.position = position
                        snapshot.timestamp = now
                        if let duration, duration > 0 {
                            snapshot.timeRange = 0...duration
                            snapshot.metadata.duration = duration
                        }
                    }
                }
            } catch {
                noteFailure(error)
            }
            if let fed, !fed() { lastAdvance = clock.now() }
            if deviceState == .playing, clock.now() - lastAdvance > configuration.watchdog {
                fail(MediaDeviceError(
                    .sessionFailed,
                    "\(renderer.device.displayName) says PLAYING but playback has not advanced for \(configuration.watchdog) (is the URL reachable from it?)"))
            }
        }
    }

    private func noteFailure(_ error: MediaDeviceError) {
        consecutiveFailures += 1
        logger.debug("renderer request failed (\(consecutiveFailures) in a row): \(error)")
        if consecutiveFailures >= 3 && (error.code == .connectionFailed || error.code == .timedOut) {
            fail(MediaDeviceError(.connectionFailed, "\(renderer.device.displayName) stopped answering: \(error.message)"))
        }
    }

    private func fail(_ error: MediaDeviceError) {
        guard !finished else { return }
        logger.warning("session failed", metadata: ["device": "\(renderer.device.displayName)", "error": "\(error)"])
        control.update { $0.state = .failed }
        report(.failed(error))
        Task { await self.stop(deviceGone: error.code == .connectionFailed) }
    }

    // MARK: Commands

    private func consumeCommands() async {
        for await command in control.commands {
            guard !finished else { return }
            do {
                switch command {
                case .play: _ = try await client.call(AVTransportAction.play())
                case .pause: _ = try await client.call(AVTransportAction.pause)
                case .seek(let position):
                    _ = try await client.call(AVTransportAction.seek(relativeTime: position))
                    lastAdvance = clock.now()
                    lastPosition = position
                case .setSpeed(let speed):
                    _ = try await client.call(AVTransportAction.play(speed: AVTransportAction.speed(speed)))
                case .setVolume(let level):
                    _ = try await client.call(RenderingControlAction.setVolume(renderer.deviceVolume(level)))
                    report(.volume(level: renderer.level(renderer.deviceVolume(level)), muted: nil))
                case .setMuted(let muted):
                    _ = try await client.call(RenderingControlAction.setMute(muted))
                    report(.volume(level: nil, muted: muted))
                case .selectAudible, .selectLegible:
                    logger.debug("track selection is not part of UPnP AVTransport; ignored")
                case .stop:
                    _ = try await client.call(AVTransportAction.stop)
                }
                if !eventsHealthy { await refreshTransportState() }
            } catch {
                logger.notice("\(command) on \(renderer.device.displayName) failed: \(error)")
                await refreshTransportState()
            }
        }
    }
}
