#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
import CastChannel
import HTTPServing
public import Logging
public import MediaClock
public import MediaDevice
public import LiveStreaming
public import VideoStreaming
public import RoutingModel
public import Transport

/// Google Cast receivers (Chromecasts, Google TVs, Nest speakers, soundbars, Cast groups),
/// announced as `_googlecast._tcp`, reached over the Cast channel: TLS to their port, the
/// `CastMessage` framing, JSON in namespaces.
///
/// Activation opens the channel (`CONNECT`, `GET_STATUS`): the route is active with the
/// receiver's volume. A URL session launches the Default Media Receiver (or, in
/// application mode, the app the session names) and `LOAD`s the URL with the session's
/// title, artist and artwork; `MEDIA_STATUS` drives the session's ``PlaybackControl``, so a
/// pause from a phone or the volume buttons reach the app and Now Playing. The app's data
/// channel is the app's own namespace, both ways.
///
/// A channel that dies (no heartbeat answer, a reset) is reopened with backoff, 1 s doubling
/// to 60 s with jitter, and a session whose app still runs is resumed: the app sees only
/// `buffering` meanwhile. A route ends only when its app was stopped (by another sender or
/// on the device), when the device is gone from discovery while its channel is down, or when
/// the device presents another certificate than the one pinned at first use.
public actor CastExtension {
    public static let defaultProtocol = MediaSharingProtocol("org.mediaroute.cast", displayName: "Google Cast")
    public static let serviceType = "_googlecast._tcp"

    /// How the extension behaves; the defaults are the protocol's.
    public struct Configuration: Sendable {
        /// Where the pinned certificates live (`cast-certificates.json` in the daemon's state
        /// directory); nil keeps them in memory only.
        public var certificatesPath: String?
        /// The data-channel namespace of an application, by its app id (`urn:x-cast:…`).
        /// Without one, the first namespace of its own the running app lists is used, else
        /// `urn:x-cast:` and the app id.
        public var applicationNamespaces: [String: String]
        /// A `PING` this often; no message for ``heartbeatTimeout``: the channel is dead.
        public var heartbeatInterval: Duration
        public var heartbeatTimeout: Duration
        /// The first wait before reconnecting; doubled after each failed attempt up to ``maximumReconnectDelay``.
        public var initialReconnectDelay: Duration
        public var maximumReconnectDelay: Duration
        /// How long a request waits for its answer.
        public var requestTimeout: Duration
        /// A route's real-time audio as a live stream: framing, backlog, fetch timeout, latency.
        public var live = CastExtension.defaultLiveSettings
        /// Real-time video: bit rate, IDR period, backlog, declared latency.
        public var video = LiveVideoSettings()

        public init(
            certificatesPath: String? = nil, applicationNamespaces: [String: String] = [:], heartbeatInterval: Duration = .seconds(5),
            heartbeatTimeout: Duration = .seconds(10), initialReconnectDelay: Duration = .seconds(1), maximumReconnectDelay: Duration = .seconds(60),
            requestTimeout: Duration = .seconds(10)
        ) {
            self.certificatesPath = certificatesPath
            self.applicationNamespaces = applicationNamespaces
            self.heartbeatInterval = heartbeatInterval
            self.heartbeatTimeout = heartbeatTimeout
            self.initialReconnectDelay = initialReconnectDelay
            self.maximumReconnectDelay = maximumReconnectDelay
            self.requestTimeout = requestTimeout
        }
    }

    /// What plays on a route: the app, its channel ends, the media session.
    struct Playback {
        var application: CastApplication
        /// The session's app identifier in application mode; nil for the Default Media Receiver.
        var applicationIdentifier: String?
        /// The app's own namespace for the data channel (application mode).
        var dataNamespace: String?
        var mediaSessionID: Int?
        var control: PlaybackControl?
        var commands: Task<Void, Never>?
        /// Set when we stop it, so the receiver's word that it stopped does not end the route.
        var stopping = false
        /// Counts the media statuses applied: a command's reply is applied only when none came
        /// since the command was sent (a later broadcast, say the device's own pause, is newer).
        var statusesApplied = 0
        /// Local files this session handed to the receiver (``ServedFiles`` tokens).
        var fileTokens: [String] = []
    }

    struct Route {
        var device: MediaOutputDevice
        var session: MediaOutputSession
        var endpoint: Endpoint
        /// Our end of every virtual connection of this route (`sender-…`).
        let senderID: String
        var client: CastChannelClient?
        var events: Task<Void, Never>?
        var activated = false
        var volume = CastVolume(level: 1, muted: false)
        var playback: Playback?
        /// A certificate that differs from the pinned one, while the person is asked about it.
        var unconfirmedCertificate: String?
        var reconnecting: Task<Void, Never>?
        /// When the channel last opened (on the extension's clock).
        var openedAt: Duration?
        /// The device left discovery (its channel is trusted only while it is up).
        var lost = false
    }

    public nonisolated let protocolType: MediaSharingProtocol
    /// Each receiver (and each group) is a route of its own.
    public nonisolated var supportsSimultaneousSessions: Bool { true }
    let configuration: Configuration
    let transport: any Transport
    let routingManager: MediaDeviceRoutingManager
    let clock: any HostClock
    let logger: Logger
    let pins: CastCertificatePins
    /// Certificates receivers presented in place of their pinned one, refused until someone
    /// accepts them (the activation prompt, or `trust accept`), by device id; at most 64.
    var offeredCertificates: [String: (fingerprint: String, name: String)] = [:]
    private let discovery = DiscoveryDriver()
    private var endpoints: [String: Endpoint] = [:]
    private var reported: [String: MediaOutputDevice] = [:]
    var routes: [UUID: Route] = [:]
    /// The routes' real-time audio, each a live stream the receiver fetches.
    var liveStreams: [UUID: CastLiveRoute] = [:]
    /// The latency each route declares since its receiver's positions measured it (it outlives
    /// one live stream: the route's next acquisition declares it at once).
    var measuredLiveLatency: [UUID: Duration] = [:]
    /// The routes' real-time video, each a live fragmented MP4 the receiver fetches.
    var liveVideos: [UUID: LiveVideoStream] = [:]
    /// Local files played on receivers, each served to its receiver only while its session lasts.
    let files = ServedFiles()
    /// Our HTTP servers the receivers fetch local files from, one per address facing them.
    let fileServers: HTTPServerPool

    /// - Parameter transport: where receivers are found (mDNS `_googlecast._tcp` endpoints)
    ///   and connected (a TLS stream whose ``ByteStream/peerCertificate`` is pinned).
    public init(
        transport: any Transport, routingManager: MediaDeviceRoutingManager, configuration: Configuration = Configuration(),
        protocolType: MediaSharingProtocol = CastExtension.defaultProtocol, clock: any HostClock = SystemHostClock(),
        logger: Logger = Logger(label: "mediaroute.extension.cast")
    ) {
        self.transport = transport
        self.routingManager = routingManager
        self.configuration = configuration
        self.protocolType = protocolType
        self.clock = clock
        self.logger = logger
        self.pins = CastCertificatePins(path: configuration.certificatesPath)
        let files = self.files
        self.fileServers = HTTPServerPool(logger: logger) { files.response(to: $0) ?? HTTPServerResponse(status: 404) }
    }

    var timing: CastChannelClient.Timing {
        CastChannelClient.Timing(
            heartbeatInterval: configuration.heartbeatInterval, heartbeatTimeout: configuration.heartbeatTimeout,
            requestTimeout: configuration.requestTimeout, launchTimeout: max(configuration.requestTimeout, .seconds(30)))
    }

    // MARK: Discovery

    /// Whether an endpoint is a Cast receiver's service.
    static func isCast(_ endpoint: Endpoint) -> Bool {
        endpoint.services.contains { $0.hasPrefix(serviceType) } || endpoint.attributes["serviceType"]?.hasPrefix(serviceType) == true
            || endpoint.id.hasSuffix(".\(serviceType).local")
    }

    /// The device a `_googlecast._tcp` endpoint announces: a TV when it shows video, a speaker
    /// when it only plays sound, a group of its own for a Cast group; its id is the
    /// receiver's `id`, and the UDN that id makes joins it with the same TV seen over UPnP.
    /// Every receiver plays URLs; one that has sound out (`ca` bit 2) also takes real-time audio.
    public static func device(for endpoint: Endpoint) -> MediaOutputDevice? {
        guard isCast(endpoint), case .ip = endpoint.address, let record = CastDeviceRecord(txt: endpoint.attributes) else { return nil }
        var endpoint = endpoint
        if let udn = record.udn, !endpoint.identifiers.contains(.udn(udn)) { endpoint.identifiers.append(.udn(udn)) }
        let type: MediaOutputDevice.DeviceType = record.isGroup ? .speakerGroup : record.showsVideo ? .tv : .speaker
        // A receiver with sound out also plays the box's own audio, as a live stream it fetches.
        var capabilities: MediaOutputDevice.Capabilities = record.capabilities.contains(.audioOut) ? [.urlPlayback, .realtimeAudioStreaming] : [.urlPlayback]
        // One with a screen shows the box's video, as a live MP4 stream it fetches.
        if record.capabilities.contains(.videoOut) { capabilities.insert(.realtimeVideoStreaming) }
        return MediaOutputDevice(
            id: "cast:" + record.id, displayName: record.friendlyName, capabilities: capabilities, deviceType: type, volumeControl: .absolute,
            canMute: true, requiredNetworkEndpoints: [endpoint])
    }

    public func startDeviceDiscovery() {
        discovery.start(transport) { await self.handle($0) }
    }

    public func stopDeviceDiscovery() {
        discovery.stop()
    }

    private func handle(_ event: DiscoveryEvent) {
        switch event {
        case .appeared(let endpoint), .updated(let endpoint):
            guard let device = Self.device(for: endpoint) else { return }
            endpoints[endpoint.id] = endpoint
            for (id, route) in routes where route.device.id == device.id {
                routes[id]?.lost = false
                routes[id]?.endpoint = endpoint
            }
            if reported.updateValue(device, forKey: device.id) == nil {
                routingManager.foundDevice(device)
            } else {
                routingManager.updateDevices([device])
            }
        case .lost(let endpointID):
            guard let endpoint = endpoints.removeValue(forKey: endpointID), let device = Self.device(for: endpoint) else { return }
            guard let gone = reported.removeValue(forKey: device.id) else { return }
            for (id, route) in routes where route.device.id == device.id {
                routes[id]?.lost = true
                // A route whose channel is down has nothing left to come back to.
                if route.reconnecting != nil { endRoute(id, MediaDeviceError(.deviceLost, "\(device.displayName) is gone from the network")) }
            }
            routingManager.lostDevice(gone)
        case .failed(let error):
            routingManager.discoveryFailed(MediaDeviceError(.discoveryFailed, "Google Cast: " + error.message))
        }
    }

    // MARK: Activation

    public func activateDevice(_ device: MediaOutputDevice, session: MediaOutputSession, for deviceFeatures: MediaOutputDevice.Capabilities) {
        guard let endpoint = device.requiredNetworkEndpoints.first(where: Self.isCast) else {
            routingManager.failedToActivateDevice(device, session: session, error: MediaDeviceError(.connectionFailed, "no Cast address"))
            return
        }
        let sender = "sender-mr" + String(UInt32.random(in: 1 ... .max), radix: 16)
        routes[session.id] = Route(device: device, session: session, endpoint: endpoint, senderID: sender)
        Task { await self.open(session.id, confirmed: nil) }
    }

    /// Opens the route's channel: TLS, the certificate checked against its pin, `CONNECT`,
    /// the receiver's status. On first activation the route becomes active; on a reconnect
    /// its session is resumed.
    /// - Parameter confirmed: a certificate fingerprint the person accepted through the pairing flow.
    func open(_ id: UUID, confirmed: String?) async {
        guard let route = routes[id] else { return }
        var opening: CastChannelClient?
        do {
            let client = try await connect(route.endpoint)
            opening = client
            guard routes[id] != nil else {
                await client.close()
                return
            }
            let fingerprint = CastCertificatePins.fingerprint(client.peerCertificate ?? [])
            switch pins.verdict(for: route.device.id, fingerprint: fingerprint) {
            case .matches: break
            case .firstUse: break
            case .changed where confirmed == fingerprint: break
            case .changed:
                await client.close()
                certificateChanged(id, fingerprint: fingerprint)
                return
            }
            await client.start()
            routes[id]?.client = client
            routes[id]?.events = Task { await self.follow(id, client) }
            try await client.send(.connect, from: CastNamespace.platformSender, to: CastNamespace.platformReceiver)
            let reply = try await client.request(
                .getReceiverStatus(requestID: await client.requestID()), from: CastNamespace.platformSender, to: CastNamespace.platformReceiver)
            guard case .receiverStatus(let status, _) = reply else {
                throw CastChannelFailure(.protocolViolation, "GET_STATUS was answered with \(reply)")
            }
            // Trust on first use: pinned once the receiver has spoken the protocol over it.
            pins.pin(fingerprint, for: route.device.id, name: route.device.displayName)
            offeredCertificates[route.device.id] = nil
            await opened(id, status: status)
        } catch {
            // A channel that opened but did not answer is not the route's: the next attempt starts afresh.
            if let opening {
                if routes[id]?.client === opening {
                    routes[id]?.client = nil
                    routes[id]?.events?.cancel()
                }
                await opening.close()
            }
            await openFailed(id, error)
        }
    }

    /// A receiver that has just announced itself may not listen yet: a refused connection is
    /// tried twice more, 300 ms apart.
    private func connect(_ endpoint: Endpoint) async throws -> CastChannelClient {
        var attempt = 0
        while true {
            do {
                let connection = try await transport.connect(to: endpoint)
                guard let stream = connection.byteStream else {
                    await connection.close()
                    throw TransportError(.unsupported, "the transport gives no byte stream")
                }
                return CastChannelClient(connection: connection, stream: stream, timing: timing, clock: clock, logger: logger)
            } catch let error as TransportError where error.code == .connectionRefused && attempt < 2 {
                attempt += 1
                try? await clock.sleep(for: .milliseconds(300))
            }
        }
    }

    private func opened(_ id: UUID, status: CastReceiverStatus) async {
        guard var route = routes[id] else { return }
        route.reconnecting = nil
        route.openedAt = clock.now()
        if let volume = status.volume { route.volume = volume }
        let first = !route.activated
        route.activated = true
        routes[id] = route
        if first {
            routingManager.activatedDevice(route.device, session: route.session)
            announceVolume(id)
        } else {
            logger.info("Cast channel reopened", metadata: ["device": "\(route.device.displayName)"])
            await resume(id, status: status)
        }
    }

    private func openFailed(_ id: UUID, _ error: any Error) async {
        guard let route = routes[id] else { return }
        if route.activated {
            // A reconnect attempt failed: the loop tries again.
            logger.notice("Cast reconnect failed", metadata: ["device": "\(route.device.displayName)", "error": "\(error)"])
            return
        }
        routes[id] = nil
        measuredLiveLatency[id] = nil
        routingManager.failedToActivateDevice(route.device, session: route.session, error: Self.mediaError(error, activating: true))
    }

    static func mediaError(_ error: any Error, activating: Bool) -> MediaDeviceError {
        if let error = error as? MediaDeviceError { return error }
        if let error = error as? TransportError {
            let code: MediaDeviceError.Code = error.code == .timedOut ? .timedOut : error.code == .authenticationFailed ? .authorizationFailed : .connectionFailed
            return MediaDeviceError(code, error.message)
        }
        if let error = error as? CastChannelFailure {
            return MediaDeviceError(error.reason == .requestTimeout ? .timedOut : activating ? .connectionFailed : .sessionFailed, error.description)
        }
        return MediaDeviceError(activating ? .connectionFailed : .sessionFailed, "\(error)")
    }

    /// The device presents another certificate than the pinned one: the person is asked to
    /// confirm the new one (its short fingerprint); until then nothing is sent to it. On a
    /// reconnect, the route ends instead: a changed device is never taken silently.
    private func certificateChanged(_ id: UUID, fingerprint: String) {
        guard let route = routes[id] else { return }
        logger.warning("Cast receiver presents another certificate than the pinned one", metadata: ["device": "\(route.device.displayName)"])
        if offeredCertificates.count >= 64, offeredCertificates[route.device.id] == nil { offeredCertificates.removeAll() }
        offeredCertificates[route.device.id] = (fingerprint, route.device.displayName)
        if route.activated {
            endRoute(id, MediaDeviceError(
                .authorizationFailed, "\(route.device.displayName) presents another certificate than before; activate it again and confirm, or accept it with mediaroutectl trust accept"))
            return
        }
        routes[id]?.unconfirmedCertificate = fingerprint
        routingManager.requestPairingCode(
            for: route.device, session: route.session,
            reason: "\(route.device.displayName) presents another certificate than the one it had (now \(CastCertificatePins.shortForm(fingerprint))); confirm only if it was reset or replaced",
            authorizationMethod: .confirmation(code: CastCertificatePins.shortForm(fingerprint)))
    }

    public func connectUsingPairingCode(_ pairingCode: String?, to device: MediaOutputDevice, session: MediaOutputSession) {
        guard let route = routes[session.id], let fingerprint = route.unconfirmedCertificate else { return }
        routes[session.id]?.unconfirmedCertificate = nil
        guard pairingCode != nil else {
            routes[session.id] = nil
            measuredLiveLatency[session.id] = nil
            routingManager.failedToActivateDevice(
                device, session: session,
                error: MediaDeviceError(.authorizationFailed, "\(device.displayName)'s new certificate was not confirmed; it is refused until it is"))
            return
        }
        Task { await self.open(session.id, confirmed: fingerprint) }
    }

    public func deactivateDevice(_ device: MediaOutputDevice, session: MediaOutputSession) {
        liveStreams.removeValue(forKey: session.id)?.stream?.finish()
        liveVideos.removeValue(forKey: session.id)?.finish()
        guard let route = routes.removeValue(forKey: session.id) else { return }
        measuredLiveLatency[session.id] = nil
        withdrawFiles(of: route.playback)
        route.reconnecting?.cancel()
        route.playback?.commands?.cancel()
        route.events?.cancel()
        Task {
            if let client = route.client {
                if let playback = route.playback {
                    // The receiver goes back to idle: what this box started, it stops.
                    try? await client.send(.close, from: route.senderID, to: playback.application.transportId)
                    _ = try? await client.request(
                        .stopApplication(sessionID: playback.application.sessionId, requestID: await client.requestID()),
                        from: CastNamespace.platformSender, to: CastNamespace.platformReceiver)
                }
                try? await client.send(.close, from: CastNamespace.platformSender, to: CastNamespace.platformReceiver)
                await client.close()
            }
            route.playback?.control?.finish()
        }
    }

    /// Ends a route from the extension's side, with the reason in the route's end event.
    func endRoute(_ id: UUID, _ error: MediaDeviceError) {
        liveStreams.removeValue(forKey: id)?.stream?.finish()
        guard let route = routes.removeValue(forKey: id) else { return }
        measuredLiveLatency[id] = nil
        withdrawFiles(of: route.playback)
        logger.info("Cast route ended", metadata: ["device": "\(route.device.displayName)", "reason": "\(error.message)"])
        route.reconnecting?.cancel()
        route.playback?.commands?.cancel()
        route.events?.cancel()
        if let client = route.client { Task { await client.close() } }
        routingManager.failedToActivateDevice(route.device, session: route.session, error: error)
    }

    // MARK: The channel's events

    /// Follows what one channel reports until it ends; then reconnects unless we closed it.
    private func follow(_ id: UUID, _ client: CastChannelClient) async {
        for await event in client.events {
            guard routes[id]?.client === client else { return }
            switch event {
            case .message(let source, let reply): await received(reply, from: source, on: id)
            case .ended(let failure):
                guard failure.reason != .closed else { return }
                channelDied(id, failure)
            }
        }
    }

    private func received(_ reply: CastReply, from source: String, on id: UUID) async {
        guard let route = routes[id] else { return }
        switch reply {
        case .receiverStatus(let status, _):
            receiverStatus(status, on: id)
        case .mediaStatus(let list, _):
            if let status = list.first(where: { $0.mediaSessionId == route.playback?.mediaSessionID }) ?? list.first {
                mediaStatus(status, on: id)
            }
        case .close:
            // The app closed our virtual connection to it: whether it stopped, its status says.
            if let playback = route.playback, source == playback.application.transportId, let client = route.client {
                _ = try? await client.request(
                    .getReceiverStatus(requestID: await client.requestID()), from: CastNamespace.platformSender, to: CastNamespace.platformReceiver)
            }
        case .application(let namespace, let payload):
            guard let playback = route.playback, let application = playback.applicationIdentifier, namespace == playback.dataNamespace else {
                logger.debug("Cast message in a namespace no route listens to", metadata: ["namespace": "\(namespace.prefix(80))"])
                return
            }
            let bytes: [UInt8]
            switch payload {
            case .text(let text): bytes = Array(text.utf8)
            case .binary(let data): bytes = data
            }
            routingManager.receivedData(Data(bytes), fromApplication: application, session: route.session)
        case .loadFailed, .refused, .launchError, .unhandled, .ping, .pong:
            break
        }
    }

    private func receiverStatus(_ status: CastReceiverStatus, on id: UUID) {
        guard let route = routes[id] else { return }
        if let volume = status.volume, volume != route.volume {
            routes[id]?.volume = CastVolume(level: volume.level ?? route.volume.level, muted: volume.muted ?? route.volume.muted)
            announceVolume(id)
        }
        if let playback = route.playback, status.application(session: playback.application.sessionId) == nil, status.applications != nil {
            applicationStopped(id, by: playback.stopping ? nil : "another sender or the device")
        }
    }

    /// The route's app no longer runs: its session ends; stopped by someone else, so does the route.
    func applicationStopped(_ id: UUID, by whom: String?) {
        guard let route = routes[id], let playback = route.playback else { return }
        routes[id]?.playback = nil
        withdrawFiles(of: playback)
        playback.commands?.cancel()
        guard let whom else { return }
        let name = playback.application.displayName ?? playback.application.appId
        let error = MediaDeviceError(.cancelled, "\(name) on \(route.device.displayName) was stopped by \(whom)")
        playback.control?.update { $0.state = .ended }
        routingManager.sessionFailed(route.session, error: error)
        endRoute(id, error)
    }

    func announceVolume(_ id: UUID) {
        guard let route = routes[id] else { return }
        let level = Float(route.volume.level ?? 1)
        let muted = route.volume.muted ?? false
        routingManager.volumeChanged(for: route.device, volume: level, muted: muted)
        route.playback?.control?.update { snapshot in
            snapshot.volume = level
            snapshot.isMuted = muted
        }
    }

    // MARK: Reconnecting

    /// The channel died under an active route: it is reopened with backoff (1 s doubling to
    /// 60 s, ±20 % jitter) for as long as the device is in discovery; meanwhile a playing
    /// session shows `buffering`.
    private func channelDied(_ id: UUID, _ failure: CastChannelFailure) {
        guard let route = routes[id], route.reconnecting == nil else { return }
        logger.notice("Cast channel lost", metadata: ["device": "\(route.device.displayName)", "reason": "\(failure)"])
        routes[id]?.client = nil
        if route.lost {
            endRoute(id, MediaDeviceError(.deviceLost, "\(route.device.displayName) is gone from the network (\(failure.reason.rawValue))"))
            return
        }
        if let control = route.playback?.control, control.playbackState == .playing || control.playbackState == .paused || control.playbackState == .loading {
            control.update { snapshot in
                snapshot.position = snapshot.position(at: self.clock.now())
                snapshot.timestamp = self.clock.now()
                snapshot.state = .buffering
                snapshot.playbackSpeed = 0
            }
        }
        routes[id]?.reconnecting = Task { await self.reconnect(id) }
    }

    /// A channel that had been up a while is tried again at once (a receiver that reset one
    /// connection usually takes the next: pychromecast does the same); every later attempt, and
    /// the first after a channel that died young, waits 1 s doubling to 60 s, ±20 %, so a
    /// receiver that keeps dropping us is not hammered.
    private func reconnect(_ id: UUID) async {
        var delay = configuration.initialReconnectDelay
        let livedLong = routes[id]?.openedAt.map { clock.now() - $0 >= Self.steadyChannel } ?? false
        if livedLong, routes[id]?.client == nil {
            await open(id, confirmed: nil)
        }
        while let route = routes[id], route.client == nil {
            let jitter = Double.random(in: 0.8...1.2)
            let wait = Duration.nanoseconds(Int64(Double(delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000) * jitter))
            guard (try? await clock.sleep(for: wait)) != nil, routes[id] != nil else { return }
            await open(id, confirmed: nil)
            delay = min(delay * 2, configuration.maximumReconnectDelay)
        }
    }

    /// How long a channel must have been up for its loss to be retried at once.
    static let steadyChannel: Duration = .seconds(5)

    /// After a reconnect: the app still running is joined again (`CONNECT` to its transport,
    /// its media status read); one that stopped while we were away ends the route.
    private func resume(_ id: UUID, status: CastReceiverStatus) async {
        guard let route = routes[id], let playback = route.playback, let client = route.client else { return }
        guard let application = status.application(session: playback.application.sessionId) else {
            applicationStopped(id, by: playback.stopping ? nil : "another sender or the device while the connection was down")
            return
        }
        routes[id]?.playback?.application = application
        do {
            try await client.send(.connect, from: route.senderID, to: application.transportId)
            guard playback.mediaSessionID != nil || playback.applicationIdentifier == nil else { return }
            let reply = try await client.request(
                .getMediaStatus(mediaSessionID: nil, requestID: await client.requestID()), from: route.senderID, to: application.transportId)
            if case .mediaStatus(let list, _) = reply, let media = list.first(where: { $0.mediaSessionId == playback.mediaSessionID }) ?? list.first {
                mediaStatus(media, on: id)
            }
        } catch {
            logger.notice("Cast session not resumed yet", metadata: ["error": "\(error)"])
        }
    }
}

extension CastExtension: IdentityPinning {
    /// Each receiver's pinned certificate, with the one it presents instead when it changed.
    public func pinnedIdentities() -> [PinnedIdentity] {
        pins.all.map { id, pin in
            let name = reported[id]?.displayName ?? offeredCertificates[id]?.name ?? (pin.name.isEmpty ? id : pin.name)
            return PinnedIdentity(
                kind: .castCertificate, deviceID: id, name: name, pinned: CastCertificatePins.shortForm(pin.fingerprint),
                offered: offeredCertificates[id].map { CastCertificatePins.shortForm($0.fingerprint) })
        }
    }

    public func forgetIdentity(of deviceID: String) -> Int {
        offeredCertificates[deviceID] = nil
        return pins.forget(deviceID) ? 1 : 0
    }

    public func acceptIdentity(of deviceID: String) -> Bool {
        guard let offered = offeredCertificates.removeValue(forKey: deviceID) else { return false }
        pins.pin(offered.fingerprint, for: deviceID, name: offered.name)
        logger.notice("Cast receiver's new certificate accepted", metadata: ["device": "\(offered.name)"])
        return true
    }
}
