#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import Logging
import LoopbackTransport
public import MediaClock
public import MediaDevice
public import RoutingModel
public import Transport

/// A media device extension for the loopback transport's simulated devices:
/// a TV (URL playback, real-time video taken raw, 4-digit PIN, absolute volume, mute) and a speaker
/// (real-time audio, relative volume). It speaks ``LoopbackRequest``s over
/// transport connections exactly as a real extension speaks its protocol.
public actor LoopbackExtension: MediaDeviceExtension, RealtimeSampleHandling {
    /// The protocol id the demo and tests use.
    public static let defaultProtocol = MediaSharingProtocol("org.mediaroute.loopback", displayName: "Loopback")

    public nonisolated let protocolType: MediaSharingProtocol
    public nonisolated let supportsSimultaneousSessions: Bool

    private struct SessionState {
        let session: MediaOutputSession
        var device: MediaOutputDevice
        var link: LoopbackDeviceLink?
        /// Deactivated before the connection was up: close it when it comes.
        var cancelled = false
        var playback: PlaybackControl?
        var commandPump: Task<Void, Never>?
        var application: String?
        var streaming = false
        /// Buffers on their way to the speaker, sent one after another so they arrive in order.
        var audio: AsyncStream<SampleBuffer>.Continuation?
        /// Where the route system hands the samples, on its delivering thread.
        var receiver: QueueReceiver?
        /// The route's real-time video, while it runs.
        var video: LoopbackVideoReceiver?
    }

    /// Takes samples on the delivering thread into the session's queue to the speaker: the
    /// smallest ``RealtimeSampleReceiver``, for extension authors to start from.
    final class QueueReceiver: RealtimeSampleReceiver {
        let queue: AsyncStream<SampleBuffer>.Continuation
        init(_ queue: AsyncStream<SampleBuffer>.Continuation) { self.queue = queue }
        func receive(_ buffer: SampleBuffer) -> Bool {
            if case .enqueued = queue.yield(buffer) { return true }
            return false
        }
    }

    private let transport: any Transport
    private let routingManager: MediaDeviceRoutingManager
    private let clock: any HostClock
    private let logger: Logger
    private let requestTimeout: Duration
    private let discovery = DiscoveryDriver()
    private var known = DiscoveredDevices()
    private var sessions: [UUID: SessionState] = [:]
    private var volumes: [String: (level: Float, muted: Bool)] = [:]
    /// Frames the speaker confirmed receiving, per session.
    private var acknowledgedFrames: [UUID: Int] = [:]

    public init(
        transport: any Transport,
        routingManager: MediaDeviceRoutingManager,
        protocolType: MediaSharingProtocol = LoopbackExtension.defaultProtocol,
        supportsSimultaneousSessions: Bool = true,
        clock: any HostClock = SystemHostClock(),
        requestTimeout: Duration = .seconds(5),
        logger: Logger = Logger(label: "mediaroute.extension.loopback")
    ) {
        self.transport = transport
        self.routingManager = routingManager
        self.protocolType = protocolType
        self.supportsSimultaneousSessions = supportsSimultaneousSessions
        self.clock = clock
        self.requestTimeout = requestTimeout
        self.logger = logger
    }

    // MARK: Discovery

    public func startDeviceDiscovery() {
        discovery.start(transport) { await self.handleDiscovery($0) }
    }

    public func stopDeviceDiscovery() {
        discovery.stop()
    }

    private func handleDiscovery(_ event: DiscoveryEvent) {
        let logger = self.logger
        if case .updated(let endpoint) = event {
            // An active speaker that reports another latency: its route's latency follows.
            for (id, state) in sessions where state.device.id == endpoint.id {
                let before = state.device.requiredNetworkEndpoints.first?.attributes[LoopbackTransport.audioLatencyAttribute]
                let after = endpoint.attributes[LoopbackTransport.audioLatencyAttribute]
                guard let device = Self.device(for: endpoint) else { continue }
                sessions[id]?.device = device
                if before != after, let microseconds = after.flatMap(Int.init) {
                    routingManager.routeChanged(state.session, reason: "the speaker reports \(microseconds / 1_000) ms of delay")
                }
            }
        }
        known.apply(event, to: routingManager) { endpoint in
            let device = Self.device(for: endpoint)
            if device == nil { logger.warning("ignoring endpoint without a name", metadata: ["endpoint": "\(endpoint.id)"]) }
            return device
        }
    }

    /// The device a loopback endpoint stands for.
    public static func device(for endpoint: Endpoint) -> MediaOutputDevice? {
        let name = endpoint.name ?? endpoint.id
        let isTV = endpoint.facts.kind == .tv
        return MediaOutputDevice(
            id: endpoint.id,
            displayName: name,
            capabilities: isTV ? [.urlPlayback, .realtimeVideoStreaming] : [.realtimeAudioStreaming],
            deviceType: isTV ? .tv : .speaker,
            volumeControl: isTV ? .absolute : .relative,
            canMute: isTV,
            requiredNetworkEndpoints: [endpoint])
    }

    // MARK: Activation

    public func activateDevice(
        _ device: MediaOutputDevice, session: MediaOutputSession, for deviceFeatures: MediaOutputDevice.Capabilities
    ) {
        guard let endpoint = device.requiredNetworkEndpoints.first else {
            routingManager.failedToActivateDevice(
                device, session: session, error: MediaDeviceError(.connectionFailed, "no endpoint for \(device.id)"))
            return
        }
        sessions[session.id] = SessionState(session: session, device: device)
        Task { await self.connect(device, endpoint: endpoint, session: session) }
    }

    private func connect(_ device: MediaOutputDevice, endpoint: Endpoint, session: MediaOutputSession) async {
        let link: LoopbackDeviceLink
        do {
            let connection = try await transport.connect(to: endpoint)
            do {
                link = try LoopbackDeviceLink(connection: connection, clock: clock, requestTimeout: requestTimeout)
            } catch {
                await connection.close()
                throw error
            }
        } catch {
            sessions[session.id] = nil
            routingManager.failedToActivateDevice(
                device, session: session, error: MediaDeviceError(.connectionFailed, "\(error)"))
            return
        }
        guard var state = sessions[session.id], !state.cancelled else {
            sessions[session.id] = nil
            await link.close()
            return
        }
        state.link = link
        sessions[session.id] = state
        let id = session.id
        await link.start(
            onEvent: { event in await self.deviceEvent(event, session: id) },
            onClose: { error in await self.linkClosed(session: id, error: error) })
        do {
            guard case .welcome(_, let requiresPairing, let level, let muted) = try await link.request(.hello) else {
                throw MediaDeviceError(.connectionFailed, "unexpected answer to hello")
            }
            volumes[device.id] = (level, muted)
            if requiresPairing {
                routingManager.requestPairingCode(
                    for: device, session: session, reason: "Enter the code shown on \(device.displayName).",
                    authorizationMethod: .numericCode(length: .fourCharacter))
            } else {
                routingManager.activatedDevice(device, session: session)
            }
        } catch {
            await failActivation(session, error: MediaDeviceError(.connectionFailed, "\(error)"))
        }
    }

    public func connectUsingPairingCode(_ pairingCode: String?, to device: MediaOutputDevice, session: MediaOutputSession) {
        guard let link = sessions[session.id]?.link else {
            routingManager.failedToActivateDevice(
                device, session: session, error: MediaDeviceError(.authorizationFailed, "no connection to pair on"))
            return
        }
        guard let pairingCode else {
            Task { await self.failActivation(session, error: MediaDeviceError(.authorizationFailed, "pairing was cancelled")) }
            return
        }
        Task {
            do {
                switch try await link.request(.pair(pin: pairingCode)) {
                case .ok:
                    routingManager.activatedDevice(device, session: session)
                case .failure(let code, let message):
                    await failActivation(
                        session, error: MediaDeviceError(.authorizationFailed, code == "wrongPIN" ? "wrong PIN" : message))
                default:
                    await failActivation(session, error: MediaDeviceError(.authorizationFailed, "unexpected answer"))
                }
            } catch {
                await failActivation(session, error: MediaDeviceError(.connectionFailed, "\(error)"))
            }
        }
    }

    private func failActivation(_ session: MediaOutputSession, error: MediaDeviceError) async {
        guard let state = sessions.removeValue(forKey: session.id) else { return }
        routingManager.failedToActivateDevice(state.device, session: session, error: error)
        await state.link?.close()
    }

    public func deactivateDevice(_ device: MediaOutputDevice, session: MediaOutputSession) {
        guard var state = sessions[session.id] else { return }
        state.commandPump?.cancel()
        state.playback?.finish()
        guard let link = state.link else {
            state.cancelled = true
            sessions[session.id] = state
            return
        }
        sessions[session.id] = nil
        acknowledgedFrames[session.id] = nil
        Task { await link.close() }
    }

    // MARK: Device events

    private func deviceEvent(_ event: LoopbackReply, session id: UUID) {
        guard let state = sessions[id] else { return }
        switch event {
        case .volume(let level, let muted):
            volumes[state.device.id] = (level, muted)
            routingManager.volumeChanged(for: state.device, volume: level, muted: muted)
        case .appData(let application, let payload):
            routingManager.receivedData(Data(payload), fromApplication: application, session: state.session)
        case .playback(let status):
            state.playback.map { Self.apply(status, to: $0) }
        case .welcome, .ok, .failure, .audioReceived:
            break
        }
    }

    private func linkClosed(session id: UUID, error: (any Error)?) {
        guard let state = sessions.removeValue(forKey: id) else { return }
        state.commandPump?.cancel()
        let reason = error.map { "\($0)" } ?? "connection closed"
        if let playback = state.playback {
            playback.update { $0.state = .failed }
            routingManager.sessionFailed(state.session, error: MediaDeviceError(.sessionFailed, reason))
        }
        // Reported for an active session, this tells the system the route is gone.
        routingManager.failedToActivateDevice(
            state.device, session: state.session, error: MediaDeviceError(.connectionFailed, reason))
    }

    // MARK: Volume

    public func setVolume(_ volume: Float, for device: MediaOutputDevice) {
        send(.setVolume(volume), to: device)
    }

    public func volume(for device: MediaOutputDevice) -> Float {
        volumes[device.id]?.level ?? 0
    }

    public func changeVolume(by increments: Int, for device: MediaOutputDevice) {
        send(.changeVolume(steps: increments), to: device)
    }

    public func muteDevice(_ device: MediaOutputDevice) {
        send(.setMute(true), to: device)
    }

    public func unmuteDevice(_ device: MediaOutputDevice) {
        send(.setMute(false), to: device)
    }

    public func isDeviceMuted(_ device: MediaOutputDevice) -> Bool {
        volumes[device.id]?.muted ?? false
    }

    private func send(_ request: LoopbackRequest, to device: MediaOutputDevice) {
        guard let link = sessions.values.first(where: { $0.device.id == device.id })?.link else { return }
        Task {
            do {
                if case .volume(let level, let muted) = try await link.request(request) {
                    // Confirmed by the device: tell the system so every observer sees it.
                    self.volumes[device.id] = (level, muted)
                    self.routingManager.volumeChanged(for: device, volume: level, muted: muted)
                }
            } catch {
                logger.warning("volume request failed", metadata: ["device": "\(device.id)", "error": "\(error)"])
            }
        }
    }

    // MARK: Sessions

    public func startSession(_ session: MediaOutputSession, identifier: String?, url: URL) {
        guard let link = sessions[session.id]?.link else {
            routingManager.sessionFailed(session, error: MediaDeviceError(.sessionFailed, "the device is not connected"))
            return
        }
        Task {
            do {
                _ = try await link.request(.load(url: url.absoluteString, application: identifier))
                let reply = try await link.request(.play)
                guard case .playback(let status) = reply else {
                    if case .failure(_, let message) = reply { throw MediaDeviceError(.sessionFailed, message) }
                    throw MediaDeviceError(.sessionFailed, "unexpected answer to play")
                }
                guard var state = sessions[session.id] else { return }
                let control = PlaybackControl(clock: clock)
                control.update { snapshot in
                    snapshot.metadata = PlaybackMetadata(
                        title: url.lastPathComponent.isEmpty ? url.absoluteString : url.lastPathComponent,
                        duration: status.duration, contentURL: url)
                    snapshot.volume = volumes[state.device.id]?.level ?? 1
                    snapshot.isMuted = volumes[state.device.id]?.muted ?? false
                }
                Self.apply(status, to: control)
                state.playback = control
                state.application = identifier
                state.commandPump = Task { await self.pump(control.commands, session: session.id, link: link) }
                sessions[session.id] = state
                routingManager.started(application: identifier, playbackControl: control, session: session)
            } catch let error as MediaDeviceError {
                routingManager.sessionFailed(session, error: error)
            } catch {
                routingManager.sessionFailed(session, error: MediaDeviceError(.sessionFailed, "\(error)"))
            }
        }
    }

    /// Carries the app's playback commands to the device, one at a time, in order.
    private func pump(_ commands: AsyncStream<PlaybackCommand>, session id: UUID, link: LoopbackDeviceLink) async {
        for await command in commands {
            let request: LoopbackRequest?
            switch command {
            case .play: request = .play
            case .pause: request = .pause
            case .seek(let position): request = .seek(position: position)
            case .setSpeed(let speed): request = .setRate(speed)
            case .setVolume(let level): request = .setVolume(level)
            case .setMuted(let muted): request = .setMute(muted)
            case .stop: request = .stop
            case .selectAudible, .selectLegible: request = nil
            }
            guard let request else { continue }
            do {
                let reply = try await link.request(request)
                guard let control = sessions[id]?.playback else { return }
                switch reply {
                case .playback(let status): Self.apply(status, to: control)
                case .volume(let level, let muted): control.update { $0.volume = level; $0.isMuted = muted }
                default: break
                }
            } catch {
                logger.warning("playback command failed", metadata: ["command": "\(command)", "error": "\(error)"])
            }
        }
    }

    static func apply(_ status: LoopbackPlaybackStatus, to control: PlaybackControl) {
        control.update { snapshot in
            switch status.state {
            case .playing: snapshot.state = .playing
            case .paused: snapshot.state = status.position >= status.duration ? .ended : .paused
            case .stopped: snapshot.state = .idle
            }
            snapshot.position = status.position
            snapshot.playbackSpeed = status.rate
            snapshot.timeRange = 0...max(status.duration, 0)
        }
    }

    public func stopSession(_ session: MediaOutputSession) {
        guard var state = sessions[session.id] else { return }
        state.commandPump?.cancel()
        state.commandPump = nil
        state.playback?.finish()
        state.playback = nil
        state.application = nil
        sessions[session.id] = state
        if let link = state.link {
            Task { _ = try? await link.request(.stop) }
        }
    }

    // MARK: Data

    public func sendData(_ data: Data, toApplication applicationIdentifier: String, session: MediaOutputSession) {
        guard let link = sessions[session.id]?.link else { return }
        Task {
            do {
                _ = try await link.request(.appData(application: applicationIdentifier, payload: Array(data)))
            } catch {
                logger.warning("data to device failed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Route-channel messages addressed to the extension are answered with
    /// "extension:" and the message, so apps can check the channel both ways.
    public nonisolated var receivesRouteData: Bool { true }

    public func receiveData(_ data: Data, fromApplication applicationIdentifier: String, session: MediaOutputSession) {
        routingManager.sendData(Data("extension:".utf8) + data, toApplication: applicationIdentifier, session: session)
    }

    // MARK: Real-time audio

    /// The standard formats, with the latency the speaker declares (a scenario's `audioLatency`).
    /// A simulated device: it takes PCM as the app writes it, as it arrives.
    public func routeDetails(session: MediaOutputSession) -> RouteStatus.Details {
        RouteStatus.Details(protocolVersion: "simulated", timing: .asReceived, codec: "PCM")
    }

    public func realtimeAudioSupport(session: MediaOutputSession) -> RealtimeAudioSupport {
        var support = RealtimeAudioSupport.standard
        let microseconds = sessions[session.id]?.device.requiredNetworkEndpoints.first?.attributes[LoopbackTransport.audioLatencyAttribute]
        if let microseconds = microseconds.flatMap(Int.init), microseconds > 0 { support.latency = .microseconds(microseconds) }
        return support
    }

    public func startRealtimeSampleDelivery(session: MediaOutputSession) {
        guard var state = sessions[session.id], !state.streaming, let link = state.link else { return }
        let (buffers, continuation) = AsyncStream.makeStream(of: SampleBuffer.self)
        state.streaming = true
        state.audio = continuation
        state.receiver = QueueReceiver(continuation)
        sessions[session.id] = state
        Task {
            for await buffer in buffers {
                if case .audioReceived(let total) = try? await link.request(.audio(frames: buffer.frameCount, payload: WireBytes(buffer.data))) {
                    self.acknowledgedFrames[session.id] = total
                }
            }
        }
    }

    public func stopRealtimeSampleDelivery(session: MediaOutputSession) {
        sessions[session.id]?.streaming = false
        sessions[session.id]?.audio?.finish()
        sessions[session.id]?.audio = nil
        sessions[session.id]?.receiver = nil
    }

    public func realtimeSampleReceiver(session: MediaOutputSession) -> (any RealtimeSampleReceiver)? {
        sessions[session.id]?.receiver
    }

    /// Only for a caller that does not use ``realtimeSampleReceiver(session:)``; the route system does.
    public func receiveSamples(_ buffer: SampleBuffer, session: MediaOutputSession) {
        guard let state = sessions[session.id], state.streaming else { return }
        buffersThroughActor += 1
        state.audio?.yield(buffer)
    }

    /// Buffers that came through ``receiveSamples(_:session:)`` rather than the receiver (for tests).
    public private(set) var buffersThroughActor = 0

    /// Frames the device confirmed for a session (for tests and diagnostics).
    public func framesAcknowledged(session: MediaOutputSession) -> Int {
        acknowledgedFrames[session.id] ?? 0
    }
}

// MARK: Real-time video

extension LoopbackExtension: RealtimeVideoHandling {
    /// A simulated TV takes the raw pictures as they come (counted, not encoded).
    public func startRealtimeVideo(_ format: VideoFrameFormat, session: MediaOutputSession) async throws(MediaDeviceError) -> any RealtimeVideoReceiver {
        guard sessions[session.id]?.link != nil, sessions[session.id]?.device.capabilities.contains(.realtimeVideoStreaming) == true else {
            throw MediaDeviceError(.sessionFailed, "\(session.id): no simulated TV to show video on")
        }
        let receiver = LoopbackVideoReceiver(format: format)
        sessions[session.id]?.video = receiver
        return receiver
    }

    public func stopRealtimeVideo(session: MediaOutputSession) {
        sessions[session.id]?.video?.finish()
    }

    /// A simulated TV shows a picture as it comes.
    public func realtimeVideoLatency(session: MediaOutputSession) -> Duration { .zero }

    /// Pictures the simulated TV of a session took (for tests and the demo).
    public func videoPicturesShown(session: MediaOutputSession) -> UInt64 {
        sessions[session.id]?.video?.shown.load(ordering: .relaxed) ?? 0
    }
}
