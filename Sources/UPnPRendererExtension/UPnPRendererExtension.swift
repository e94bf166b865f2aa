#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import HTTPServing
public import LANTransport
public import MediaClock
public import Logging
public import MediaDevice
public import LiveStreaming
public import VideoStreaming
public import RoutingModel
import Transport
import UPnP

/// UPnP/DLNA MediaRenderers (most LAN TVs, many speakers) as a media device extension.
///
/// Discovery comes from the ``LANTransport`` (SSDP); each renderer's
/// description, sinks and SCPDs are read from its own host before it is
/// reported. Sessions set the URI with DIDL-Lite metadata and play; state comes
/// from GENA events (polled when events do not arrive), the position is polled
/// while playing, and a watchdog fails a session whose renderer says PLAYING
/// without advancing. A `file://` URL is served from our own HTTP server on
/// the interface facing the renderer, to that renderer only, while the session runs.
public actor UPnPRendererExtension: MediaDeviceExtension {
    /// Timings and limits.
    public struct Configuration: Sendable {
        /// How often the position (and, without events, the state) is read while a session runs.
        public var pollInterval: Duration
        /// How long a renderer may say PLAYING without advancing before the session fails.
        public var watchdog: Duration
        /// The GENA subscription time asked for, in seconds (the device may grant less).
        public var subscriptionTimeout: Int
        /// Limits of every request to a renderer.
        public var httpLimits: HTTPLimits
        /// Subscribe to GENA events (off: the state is polled, for renderers whose events are broken).
        public var usesEvents: Bool
        /// Renew subscriptions at least this often (they are renewed at half the granted time anyway).
        public var maximumRenewalInterval: Duration?
        /// Live streams of a route's real-time audio (``LiveAudioStream``): framing, backlog, latency.
        public var live = UPnPRendererExtension.defaultLiveSettings
        /// Real-time video (``LiveVideoStream``): bit rate, IDR period, backlog.
        public var video = LiveVideoSettings()

        public init(
            pollInterval: Duration = .seconds(1), watchdog: Duration = .seconds(8), subscriptionTimeout: Int = 300,
            httpLimits: HTTPLimits = HTTPLimits(maximumBodyBytes: 256 * 1024, timeout: .seconds(4), maximumRedirects: 0),
            usesEvents: Bool = true, maximumRenewalInterval: Duration? = nil
        ) {
            self.usesEvents = usesEvents
            self.maximumRenewalInterval = maximumRenewalInterval
            self.pollInterval = pollInterval
            self.watchdog = watchdog
            self.subscriptionTimeout = subscriptionTimeout
            self.httpLimits = httpLimits
        }
    }

    public static let protocolIdentifier = "org.mediaroute.upnp"
    public nonisolated let protocolType = MediaSharingProtocol(protocolIdentifier, displayName: "UPnP/DLNA")
    public nonisolated var supportsSimultaneousSessions: Bool { true }

    let transport: LANTransport
    let routingManager: MediaDeviceRoutingManager
    let configuration: Configuration
    let logger: Logger
    let servers: CallbackServers
    private let discovery = DiscoveryDriver()
    var renderers: [String: Renderer] = [:]
    /// Endpoint generations, so that a slow description read for an endpoint that
    /// was lost (or changed) meanwhile is dropped.
    private var generations: [String: Int] = [:]
    private var active: Set<String> = []
    var sessions: [UUID: RendererSession] = [:]
    let clock: any HostClock
    private var volumes: [String: (level: Float, muted: Bool)] = [:]
    /// The last volume or mute change sent to each device; the next one waits for it.
    private var volumeChanges: [String: Task<Void, Never>] = [:]
    /// Description fetches: a few at once, one per host, a bounded wait list.
    private var describeQueue = DescribeQueue()
    /// The newest endpoint and generation announced for each device waiting to be described.
    private var toDescribe: [String: (endpoint: Endpoint, generation: Int)] = [:]
    /// Descriptions asked again by themselves after a failure, by device: the tries in a row
    /// and the wait for the next (SSDP repeats nothing new for a device whose web server was
    /// not up yet, so no event would bring it back).
    private var describeRetries: [String: (tries: Int, task: Task<Void, Never>)] = [:]
    /// The most tries in a row (after 2, 4, 8, 16 and 30 s: about a minute); a later change
    /// of the device's announcement starts again.
    static let maximumDescribeRetries = 5

    /// - Parameter clock: the time renewals, polling, settling and the watchdog run on.
    public init(
        transport: LANTransport, routingManager: MediaDeviceRoutingManager, configuration: Configuration = Configuration(),
        clock: any HostClock = SystemHostClock(), logger: Logger = Logger(label: "mediaroute.upnp")
    ) {
        self.transport = transport
        self.clock = clock
        self.routingManager = routingManager
        self.configuration = configuration
        self.logger = logger
        self.servers = CallbackServers(logger: logger)
    }

    // MARK: Discovery

    public func startDeviceDiscovery() {
        discovery.start(transport) { await self.handle($0) }
    }

    public func stopDeviceDiscovery() {
        discovery.stop()
        for retry in describeRetries.values { retry.task.cancel() }
        describeRetries = [:]
    }

    private func handle(_ event: DiscoveryEvent) {
        switch event {
        case .appeared(let endpoint), .updated(let endpoint):
            // mDNS endpoints (AirPlay, Cast) share the transport; renderers come from SSDP.
            guard endpoint.facts.descriptionLocation != nil else { return }
            guard case .ip(let host, _, _) = endpoint.address else { return }
            let generation = (generations[endpoint.id] ?? 0) + 1
            generations[endpoint.id] = generation
            guard describeQueue.enqueue(DescribeQueue.Job(id: endpoint.id, host: host), now: clock.now()) else { return }
            toDescribe[endpoint.id] = (endpoint, generation)
            startDescribing()
        case .lost(let id):
            generations[id] = (generations[id] ?? 0) + 1
            describeQueue.remove(id: id)
            toDescribe[id] = nil
            describeRetries.removeValue(forKey: id)?.task.cancel()
            guard let renderer = renderers.removeValue(forKey: id) else { return }
            routingManager.lostDevice(renderer.device)
            for (sessionID, session) in sessions where session.renderer.device.id == id {
                sessions[sessionID] = nil
                Task { await session.stop(deviceGone: true) }
            }
        case .failed(let error):
            routingManager.discoveryFailed(MediaDeviceError(.discoveryFailed, "LAN: \(error.message)"))
        }
    }

    /// Starts the descriptions the queue allows now; each one that ends starts the next.
    private func startDescribing() {
        while let job = describeQueue.next() {
            guard let (endpoint, generation) = toDescribe.removeValue(forKey: job.id) else {
                describeQueue.finished(job, failed: false, now: clock.now())
                continue
            }
            Task {
                let failed = await self.describe(endpoint, generation: generation)
                self.describeQueue.finished(job, failed: failed, now: self.clock.now())
                if failed, case .ip(let host, _, _) = endpoint.address {
                    self.retryDescription(endpoint, host: host)
                } else if !failed {
                    self.describeRetries.removeValue(forKey: endpoint.id)?.task.cancel()
                }
                self.startDescribing()
            }
        }
    }

    /// Asks for a description that could not be read again once its host's pause is over,
    /// while the device is still announced and not described, at most
    /// ``maximumDescribeRetries`` times in a row (a host that never answers costs five fetches).
    private func retryDescription(_ endpoint: Endpoint, host: String) {
        let tries = (describeRetries[endpoint.id]?.tries ?? 0) + 1
        describeRetries[endpoint.id]?.task.cancel()
        guard tries <= Self.maximumDescribeRetries else {
            describeRetries[endpoint.id] = nil
            return
        }
        let wait = max(.milliseconds(10), (describeQueue.pausedUntil(host: host) ?? clock.now()) - clock.now())
        let clock = self.clock
        let task = Task {
            do { try await clock.sleep(for: wait) } catch { return }
            self.retryDue(endpoint)
        }
        describeRetries[endpoint.id] = (tries, task)
    }

    private func retryDue(_ endpoint: Endpoint) {
        // Described through a newer announcement, or waiting for it: nothing to do (a loss cancelled the wait).
        guard describeRetries[endpoint.id] != nil, renderers[endpoint.id] == nil, toDescribe[endpoint.id] == nil else { return }
        logger.debug("asking for a description again", metadata: ["device": "\(endpoint.id)", "try": "\(describeRetries[endpoint.id]?.tries ?? 0)"])
        handle(.updated(endpoint))
    }

    /// Description fetches started so far, and those running now (for tests).
    public var describeCounts: (started: Int, running: Int, waiting: Int) {
        (describeQueue.started, describeQueue.runningCount, describeQueue.waitingCount)
    }

    /// Description, then sinks (the device is reported: its type depends on them),
    /// then the SCPDs, applied as an update when they change the device.
    /// - Returns: whether the description could not be read (its host is paused a while).
    private func describe(_ endpoint: Endpoint, generation: Int) async -> Bool {
        let described: Renderer
        do {
            described = try await Renderer.describe(endpoint: endpoint, transport: transport, limits: configuration.httpLimits, clock: clock)
        } catch {
            logger.notice("device \(endpoint.id) not used: \(error)")
            return true
        }
        // Sinks first: the device type depends on them, and the renderer takes two requests at a time.
        let renderer = await described.withSinks()
        guard generations[endpoint.id] == generation else { return false }
        let isNew = renderers.updateValue(renderer, forKey: endpoint.id) == nil
        if isNew { routingManager.foundDevice(renderer.device) } else { routingManager.updateDevices([renderer.device]) }
        logger.info("renderer ready", metadata: ["name": "\(renderer.device.displayName)", "type": "\(renderer.device.deviceType)"])
        let complete = await renderer.withServiceDescriptions()
        guard generations[endpoint.id] == generation else { return false }
        renderers[endpoint.id] = complete
        if complete.device != renderer.device { routingManager.updateDevices([complete.device]) }
        await readVolume(complete)
        return false
    }

    private func readVolume(_ renderer: Renderer, fresh: Bool = true) async {
        async let volume = try? renderer.client.call(RenderingControlAction.getVolume)
        async let mute = try? renderer.client.call(RenderingControlAction.getMute)
        let level = await volume?["CurrentVolume"].flatMap { Int($0) }.map { renderer.level($0) }
        let muted = await mute?["CurrentMute"].map { $0 == "1" || $0.lowercased() == "true" }
        // A level set (or evented) while these reads were out is newer than what they read.
        guard volumes[renderer.device.id] == nil || !fresh else { return }
        remember(renderer.device.id, level: level, muted: muted, announce: false)
    }

    private func remember(_ id: String, level: Float?, muted: Bool?, announce: Bool) {
        var entry = volumes[id] ?? (1, false)
        if let level { entry.level = level }
        if let muted { entry.muted = muted }
        volumes[id] = entry
        if announce, let device = renderers[id]?.device { routingManager.volumeChanged(for: device, volume: entry.level, muted: entry.muted) }
    }

    /// Tells the system the volume and mute as last known.
    private func announceVolume(of device: MediaOutputDevice) {
        routingManager.volumeChanged(for: device, volume: volume(for: device), muted: isDeviceMuted(device))
    }

    /// The devices reported so far (for tests and the CLI).
    public var knownDevices: [MediaOutputDevice] { renderers.values.map(\.device) }

    /// Live audio streams per session (a route that takes real-time samples).
    var liveRoutes: [UUID: LiveRoute] = [:]
    /// Real-time video per session (``RealtimeVideoHandling``).
    var videoRoutes: [UUID: VideoRoute] = [:]

    // MARK: Activation

    public func activateDevice(_ device: MediaOutputDevice, session: MediaOutputSession, for deviceFeatures: MediaOutputDevice.Capabilities) {
        guard let renderer = renderers[device.id] else {
            routingManager.failedToActivateDevice(device, session: session, error: MediaDeviceError(.deviceNotFound, "\(device.displayName) is not on the LAN any more"))
            return
        }
        Task {
            // UPnP has no pairing: a renderer that answers is ready.
            do throws(MediaDeviceError) {
                _ = try await renderer.client.call(AVTransportAction.getTransportInfo)
                self.markActive(device.id)
                self.routingManager.activatedDevice(renderer.device, session: session)
            } catch {
                self.routingManager.failedToActivateDevice(device, session: session, error: error)
            }
        }
    }

    private func markActive(_ id: String) { active.insert(id) }

    public func connectUsingPairingCode(_ pairingCode: String?, to device: MediaOutputDevice, session: MediaOutputSession) {}

    public func deactivateDevice(_ device: MediaOutputDevice, session: MediaOutputSession) {
        active.remove(device.id)
        liveRoutes.removeValue(forKey: session.id)?.stream?.finish()
        if let video = videoRoutes.removeValue(forKey: session.id) {
            video.stream.finish()
            Task { await video.session?.stop() }
        }
        if let running = sessions.removeValue(forKey: session.id) {
            Task { await running.stop() }
        }
    }

    // MARK: Volume

    public func setVolume(_ volume: Float, for device: MediaOutputDevice) {
        guard let renderer = renderers[device.id] else { return }
        let units = renderer.deviceVolume(volume)
        remember(device.id, level: renderer.level(units), muted: nil, announce: false)
        inOrder(device.id) {
            do {
                _ = try await renderer.client.call(RenderingControlAction.setVolume(units))
            } catch {
                self.logger.notice("SetVolume on \(device.displayName) failed: \(error)")
                await self.readVolume(renderer, fresh: false)
                await self.announceVolume(of: renderer.device)
            }
        }
    }

    /// Runs `body` after every earlier volume or mute change of the device has finished:
    /// a change retried after a dropped connection must not land after a newer one.
    private func inOrder(_ id: String, _ body: @escaping @Sendable () async -> Void) {
        let previous = volumeChanges[id]
        volumeChanges[id] = Task {
            await previous?.value
            await body()
        }
    }

    public func volume(for device: MediaOutputDevice) -> Float { volumes[device.id]?.level ?? 1 }

    public func changeVolume(by increments: Int, for device: MediaOutputDevice) {
        setVolume(volume(for: device) + Float(increments) * 0.05, for: device)
    }

    public func muteDevice(_ device: MediaOutputDevice) { setMute(true, device) }
    public func unmuteDevice(_ device: MediaOutputDevice) { setMute(false, device) }
    public func isDeviceMuted(_ device: MediaOutputDevice) -> Bool { volumes[device.id]?.muted ?? false }

    private func setMute(_ muted: Bool, _ device: MediaOutputDevice) {
        guard let renderer = renderers[device.id] else { return }
        remember(device.id, level: nil, muted: muted, announce: false)
        inOrder(device.id) {
            _ = try? await renderer.client.call(RenderingControlAction.setMute(muted))
        }
    }

    // MARK: Sessions

    public func startSession(_ session: MediaOutputSession, identifier: String?, url: URL) {
        startSession(session, identifier: identifier, url: url, metadata: PlaybackMetadata(contentURL: url))
    }

    public func startSession(_ session: MediaOutputSession, identifier: String?, url: URL, metadata: PlaybackMetadata) {
        guard let renderer = renderers[session.deviceID] else {
            routingManager.sessionFailed(session, error: MediaDeviceError(.deviceNotFound, "\(session.deviceID) is not on the LAN any more"))
            return
        }
        Task { await self.run(session, renderer: renderer, identifier: identifier, url: url, metadata: metadata) }
    }

    private func run(_ session: MediaOutputSession, renderer: Renderer, identifier: String?, url: URL, metadata: PlaybackMetadata) async {
        do throws(MediaDeviceError) {
            let (mediaURL, mimeType, fileName, fileToken) = try await media(for: url, renderer: renderer)
            // What the app says it plays; the file name only when it said nothing.
            var described = metadata
            if described.title?.isEmpty ?? true { described.title = fileName }
            let control = PlaybackControl(clock: clock)
            let running = RendererSession(
                renderer: renderer, session: session, control: control, configuration: configuration, servers: servers, clock: clock,
                logger: logger
            ) { [weak self] report in
                guard let self else { return }
                Task { await self.handle(report, session: session) }
            }
            if let previous = sessions.updateValue(running, forKey: session.id) { await previous.stop() }
            do throws(MediaDeviceError) {
                try await running.start(mediaURL: mediaURL, metadata: described, mimeType: mimeType, fileToken: fileToken)
            } catch {
                if let fileToken { servers.routes.files.remove(fileToken) }
                if sessions[session.id] === running { sessions[session.id] = nil }
                throw error
            }
            // A renderer plays with its own player: no application runs there, so no session channel.
            routingManager.started(application: nil, playbackControl: control, session: session)
        } catch {
            routingManager.sessionFailed(session, error: error)
        }
    }

    /// The URL the renderer fetches: the URL itself, or our server's for a local file.
    private func media(for url: URL, renderer: Renderer) async throws(MediaDeviceError) -> (String, String, String, String?) {
        let text = url.absoluteString
        let name = url.lastPathComponent.isEmpty ? text : url.lastPathComponent
        guard url.isFileURL else {
            guard text.lowercased().hasPrefix("http://") || text.lowercased().hasPrefix("https://") else {
                throw MediaDeviceError(.invalidArgument, "a renderer plays http(s) URLs and local files, not \(url.scheme ?? text)")
            }
            return (text, MediaTypes.mimeType(forPath: url.path), name, nil)
        }
        let path = url.path
        guard ServedFiles.isReadableFile(atPath: path) else { throw MediaDeviceError(.invalidArgument, "\(path) is not a readable file") }
        guard let facing = renderer.endpoint.facts.interfaceAddress, case .ip(let host, _, _) = renderer.endpoint.address else {
            throw MediaDeviceError(.sessionFailed, "no local address faces \(renderer.device.displayName)")
        }
        let mimeType = MediaTypes.mimeType(forPath: path)
        let file = ServedFiles.File(path: path, mimeType: mimeType, allowedHost: host, extraHeaders: CallbackRoutes.dlnaHeaders)
        do {
            let (mediaURL, token) = try await servers.routes.files.offer(file, named: name, on: facing, via: servers.pool)
            return (mediaURL, mimeType, name, token)
        } catch {
            throw MediaDeviceError(.sessionFailed, error.description)
        }
    }

    private func handle(_ report: RendererSessionReport, session: MediaOutputSession) {
        switch report {
        case .failed(let error):
            guard sessions.removeValue(forKey: session.id) != nil else { return }
            liveRoutes.removeValue(forKey: session.id)?.stream?.finish()
            routingManager.sessionFailed(session, error: error)
        case .volume(let level, let muted):
            remember(session.deviceID, level: level, muted: muted, announce: true)
        }
    }

    /// UPnP AV (AVTransport and RenderingControl): the renderer fetches the URL and plays it
    /// on its own clock.
    public func routeDetails(session: MediaOutputSession) -> RouteStatus.Details {
        var details = RouteStatus.Details(protocolVersion: "UPnP AV 1 (DLNA)", timing: .deviceClock)
        if let stream = liveRoutes[session.id]?.stream {
            details.codec = stream.encoding.codecName
            details.bitrate = stream.bitrate
            stream.driftStatus.apply(to: &details)
        }
        return details
    }

    public func stopSession(_ session: MediaOutputSession) {
        guard let running = sessions.removeValue(forKey: session.id) else { return }
        Task {
            await running.stop()
            running.control.finish()
        }
    }

    /// Queues `url` to play after the current item (`SetNextAVTransportURI`).
    /// - Throws: ``MediaDeviceError/Code/unsupported`` when the renderer has no such action.
    public func enqueue(_ url: URL, title: String? = nil, session: MediaOutputSession) async throws(MediaDeviceError) {
        guard let running = sessions[session.id] else { throw MediaDeviceError(.deviceNotActive, "no session \(session)") }
        let (mediaURL, mimeType, name, fileToken) = try await media(for: url, renderer: running.renderer)
        do throws(MediaDeviceError) {
            try await running.setNext(mediaURL: mediaURL, title: title ?? name, mimeType: mimeType, fileToken: fileToken)
        } catch {
            if let fileToken { servers.routes.files.remove(fileToken) }
            throw error
        }
    }

    /// The running session's GENA state (for tests and diagnostics).
    public func eventStatus(of session: MediaOutputSession) async -> GENAStatus? {
        guard let running = sessions[session.id] else { return nil }
        return await running.status
    }

    /// How many files are being served (for tests: zero once sessions end).
    public var servedFileCount: Int { servers.routes.files.count }

    public func sendData(_ data: Data, toApplication applicationIdentifier: String, session: MediaOutputSession) {
        logger.debug("UPnP renderers have no application data channel; \(data.count) bytes dropped")
    }

    /// Stops discovery and every session, and closes the servers.
    public func shutdown() async {
        stopDeviceDiscovery()
        for running in sessions.values { await running.stop() }
        sessions = [:]
        await servers.closeAll()
    }
}
