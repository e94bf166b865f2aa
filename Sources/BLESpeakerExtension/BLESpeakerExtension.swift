#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
import BlueZTransport
import BluetoothAudio
public import Logging
public import MediaClock
public import MediaDevice
public import RoutingModel
public import Transport

/// BLE speakers: devices that advertise the Volume Control Service or an audio
/// sink, paired through the routing system's pairing agent, with their volume
/// through the Volume Control Service.
///
/// The extension speaks only the transport seam: it finds endpoints with
/// ``Transport/discover()``, connects with ``Transport/connect(to:)`` and uses
/// the connection's capabilities (GATT, the audio stream, pairing). BlueZ is
/// the transport that offers them on Linux; the extension does not see D-Bus.
///
/// Volume State (0x2B7D) is read at activation and followed by notification
/// (the speaker's own buttons reach `volumeChanged`); the Volume Control Point
/// (0x2B7E) takes relative steps, absolute volume `[0x04, counter, volume]`,
/// mute and unmute, each with the current change counter; when the speaker
/// refuses a stale counter (ATT error 0x80), the state is read again and the
/// write retried once. 0.0–1.0 maps to 0–255.
///
/// Where the speaker has an audio stream (BlueZ's `MediaTransport1`), its volume
/// is the volume when there is no Volume Control Service, and acquiring it gives
/// the socket real-time samples go to: PCM encoded for the stream's codec (SBC
/// here) in packets of its MTU. A codec MediaRoute cannot encode fails the
/// session with the codec's name.
public actor BLESpeakerExtension: MediaDeviceExtension, RealtimeSampleHandling {
    public static let defaultProtocol = MediaSharingProtocol("org.mediaroute.ble-speaker", displayName: "Bluetooth LE")

    private struct Active {
        let device: MediaOutputDevice
        let session: MediaOutputSession
        var link: (any Connection)?
        var gatt: (any GATTClient)?
        var state: GATTCharacteristic?
        var controlPoint: GATTCharacteristic?
        /// The Volume Control Service's state, once read.
        var volumeControl = VolumeControl()
        var watcher: Task<Void, Never>?
        var linkWatcher: Task<Void, Never>?
        var audio: (any AudioLink)?
        /// The link's audio, whether or not it has a stream yet (a speaker may set one up later).
        var audioLink: (any AudioLink)?
        var stream: AudioStreamConfiguration?
        var transportWatcher: Task<Void, Never>?
        /// Follows the stream appearing, going and changing (``AudioLink/configurations()``).
        var streamFollower: Task<Void, Never>?
        /// Acquisitions waiting for the speaker to set its stream up.
        var streamWaiters: [CheckedContinuation<Void, Never>] = []
        /// The stream went while samples flowed: until when a new one (another codec) is awaited.
        var reconfiguring: Task<Void, Never>?
        /// The codec last asked of the speaker for the person's preference (asked once).
        var requestedCodec: A2DPCodec?
        /// Codecs this box could not encode in time on this route (``LinkAdaptation/codecTooCostly``):
        /// never asked for again while the route lasts, whatever the preference.
        var costlyCodecs: Set<A2DPCodec> = []
        /// The stream that went, until the next one comes: what a switch is reported from.
        var lostStream: AudioStreamConfiguration?
        /// Counts the streams the speaker set up; the one samples were acquired on.
        var streamGeneration = 0
        var acquiredGeneration = -1
        /// Where samples go once they start (encoded and sent on the delivering thread); kept
        /// for the route's life, its phase says whether they flow.
        var sink: A2DPSampleSink?
        /// A stream was acquired for the samples and has not gone since.
        var streamUp = false
        /// Follows the stream's state while samples flow: the speaker suspending it or the
        /// stream going ends delivery.
        var streamWatcher: Task<Void, Never>?
        /// The last `release()` of the stream, awaited before it is acquired again: a release
        /// arriving after the next acquisition would end the new stream.
        var releasing: Task<Void, Never>?
    }

    public nonisolated let protocolType: MediaSharingProtocol
    private let transport: any Transport
    private let routingManager: MediaDeviceRoutingManager
    private let logger: Logger
    private let discovery = DiscoveryDriver()
    private var known = DiscoveredDevices()
    private var discoveryRun = 0
    private var active: [UUID: Active] = [:]
    /// Links being closed, by endpoint id: a new activation of the same speaker waits for the
    /// close, or the disconnect it sends would end the new route (deactivate, then activate at once).
    private var closing: [String: Task<Void, Never>] = [:]
    private let prompts = PromptBridge()
    /// How long an acquisition waits for a speaker to set its stream up (after the link, or
    /// again after a codec switch) before the session fails with that reason.
    private let audioStreamWait: Duration
    private let clock: any HostClock

    /// - Parameters:
    ///   - transport: where speakers are found and connected; on Linux, BlueZ.
    ///   - audioStreamWait: how long to wait for a speaker's audio stream that comes late.
    ///   - clock: what the waits are measured on.
    public init(transport: any Transport, routingManager: MediaDeviceRoutingManager,
                protocolType: MediaSharingProtocol = BLESpeakerExtension.defaultProtocol,
                audioStreamWait: Duration = .seconds(5), clock: any HostClock = SystemHostClock(),
                logger: Logger = Logger(label: "mediaroute.extension.ble-speaker")) {
        self.audioStreamWait = audioStreamWait
        self.clock = clock
        self.transport = transport
        self.routingManager = routingManager
        self.protocolType = protocolType
        self.logger = logger
    }

    // MARK: Discovery

    /// A speaker for every endpoint with the Volume Control Service or an audio sink; stable id from the address.
    public static func device(for endpoint: Endpoint) -> MediaOutputDevice? {
        let hasVolumeControl = endpoint.services.contains(BlueZ.volumeControlService)
        let isAudio = hasVolumeControl || endpoint.facts.bluetoothMajorClass == .audioVideo || endpoint.services.contains(where: {
            [BlueZ.audioSink, BlueZ.publishedAudioCapabilities, BlueZ.audioStreamControl].contains($0)
        })
        guard isAudio else { return nil }
        // Audio sinks without VCS take absolute volume through their MediaTransport1.
        return MediaOutputDevice(
            id: endpoint.id, displayName: endpoint.name ?? endpoint.id, capabilities: [.realtimeAudioStreaming],
            deviceType: .speaker, volumeControl: .absolute, canMute: hasVolumeControl,
            requiredNetworkEndpoints: [endpoint])
    }

    public func startDeviceDiscovery() {
        known.beginRun()
        discoveryRun &+= 1
        discovery.start(transport) { await self.handle($0) }
        // Speakers kept from the last run whose adapter or BlueZ entry went while we did not listen.
        let run = discoveryRun
        Task {
            guard let present = await self.transport.presentEndpointIDs() else { return }
            self.loseUnconfirmed(present: present, run: run)
        }
    }

    private func loseUnconfirmed(present: Set<String>, run: Int) {
        guard run == discoveryRun else { return }  // a later run asks for itself
        known.loseUnconfirmed(present: present, to: routingManager)
    }

    public func stopDeviceDiscovery() {
        discovery.stop()
    }

    private func handle(_ event: DiscoveryEvent) {
        known.apply(event, to: routingManager, failurePrefix: "Bluetooth: ", device: Self.device(for:))
    }

    // MARK: Activation

    public func activateDevice(_ device: MediaOutputDevice, session: MediaOutputSession, for deviceFeatures: MediaOutputDevice.Capabilities) {
        guard let endpoint = device.requiredNetworkEndpoints.first else {
            routingManager.failedToActivateDevice(device, session: session, error: MediaDeviceError(.connectionFailed, "no Bluetooth endpoint"))
            return
        }
        active[session.id] = Active(device: device, session: session)
        Task { await self.activate(session.id, endpoint: endpoint) }
    }

    private func activate(_ id: UUID, endpoint: Endpoint) async {
        await closing[endpoint.id]?.value
        guard let entry = active[id] else { return }
        do {
            let link = try await transport.connect(to: endpoint)
            guard active[id] != nil else {  // deactivated meanwhile
                await link.close()
                return
            }
            active[id]?.link = link
            if let pairing = link.pairing {
                // The device's questions go to the person through the routing system.
                await prompts.route(to: PromptTarget(device: entry.device, session: entry.session, routingManager: routingManager))
                do {
                    try await pairing.pair(answering: prompts)
                } catch {
                    await prompts.route(to: nil)
                    throw MediaDeviceError(error.code == .timedOut ? .timedOut : .authorizationFailed, error.message)
                }
                await prompts.route(to: nil)
            }
            if endpoint.services.contains(BlueZ.volumeControlService) { try await setUpVolumeControl(id, gatt: link.gatt) }
            if let audio = link.audio { await followAudioStream(id, audio) }
            guard let current = active[id] else { return }
            watchLink(id)
            routingManager.activatedDevice(current.device, session: current.session)
        } catch let error as MediaDeviceError {
            fail(id, error)
        } catch let error as TransportError {
            fail(id, MediaDeviceError(error.code == .timedOut ? .timedOut : .connectionFailed, error.message))
        } catch {
            fail(id, MediaDeviceError(.connectionFailed, "\(error)"))
        }
    }

    private func fail(_ id: UUID, _ error: MediaDeviceError) {
        guard let entry = active.removeValue(forKey: id) else { return }
        entry.watcher?.cancel()
        entry.linkWatcher?.cancel()
        entry.transportWatcher?.cancel()
        entry.streamWatcher?.cancel()
        entry.streamFollower?.cancel()
        entry.reconfiguring?.cancel()
        for waiter in entry.streamWaiters { waiter.resume() }
        routingManager.failedToActivateDevice(entry.device, session: entry.session, error: error)
        if let link = entry.link { Task { await link.close() } }
    }

    /// The link dropping ends the route, like a lost connection does.
    private func watchLink(_ id: UUID) {
        guard let link = active[id]?.link else { return }
        active[id]?.linkWatcher = Task {
            do {
                for try await _ in link.lifetime {}
            } catch {
                self.linkEnded(id, error)
            }
        }
    }

    private func linkEnded(_ id: UUID, _ error: any Error) {
        guard let entry = active.removeValue(forKey: id) else { return }
        entry.watcher?.cancel()
        entry.transportWatcher?.cancel()
        entry.streamWatcher?.cancel()
        entry.streamFollower?.cancel()
        entry.reconfiguring?.cancel()
        for waiter in entry.streamWaiters { waiter.resume() }
        routingManager.failedToActivateDevice(entry.device, session: entry.session, error: MediaDeviceError(.connectionFailed, "\(error)"))
    }

    public func connectUsingPairingCode(_ pairingCode: String?, to device: MediaOutputDevice, session: MediaOutputSession) {
        Task { await prompts.answer(pairingCode, session: session.id) }
    }

    public func deactivateDevice(_ device: MediaOutputDevice, session: MediaOutputSession) {
        guard let entry = active.removeValue(forKey: session.id) else { return }
        entry.watcher?.cancel()
        entry.linkWatcher?.cancel()
        entry.transportWatcher?.cancel()
        entry.streamWatcher?.cancel()
        entry.streamFollower?.cancel()
        entry.reconfiguring?.cancel()
        for waiter in entry.streamWaiters { waiter.resume() }
        let endpointID = device.requiredNetworkEndpoints.first?.id ?? device.id
        let previous = closing[endpointID]
        let close = Task {
            await previous?.value
            await prompts.answer(nil, session: session.id)
            await entry.link?.close()
        }
        closing[endpointID] = close
        Task {
            await close.value
            self.closed(endpointID, close)
        }
    }

    private func closed(_ endpointID: String, _ task: Task<Void, Never>) {
        if closing[endpointID] == task { closing[endpointID] = nil }
    }

    // MARK: Volume Control Service

    private func setUpVolumeControl(_ id: UUID, gatt: (any GATTClient)?) async throws {
        guard let gatt,
            let state = await gatt.characteristic(BlueZ.volumeState, timeout: .seconds(5)),
            let controlPoint = await gatt.characteristic(BlueZ.volumeControlPoint, timeout: .seconds(5))
        else { throw MediaDeviceError(.connectionFailed, "the speaker has no Volume Control Service characteristics") }
        active[id]?.gatt = gatt
        active[id]?.state = state
        active[id]?.controlPoint = controlPoint
        try await readState(id)
        let notifications: AsyncStream<[UInt8]>
        do {
            notifications = try await gatt.notifications(of: state)
        } catch {
            throw MediaDeviceError(.connectionFailed, "Volume State notifications: \(error)")
        }
        active[id]?.watcher = Task {
            for await value in notifications {
                self.volumeNotified(id, value)
            }
        }
    }

    private func readState(_ id: UUID) async throws {
        guard let gatt = active[id]?.gatt, let state = active[id]?.state else { return }
        let bytes: [UInt8]
        do {
            bytes = try await gatt.read(state)
        } catch {
            throw MediaDeviceError(.connectionFailed, "Volume State not read: \(error)")
        }
        guard active[id]?.volumeControl.received(bytes) != nil else {
            throw MediaDeviceError(.connectionFailed, "malformed Volume State (\(bytes.count) bytes)")
        }
    }

    private func volumeNotified(_ id: UUID, _ value: [UInt8]) {
        guard let device = active[id]?.device, active[id]?.volumeControl.received(value) == true,
            let volumeControl = active[id]?.volumeControl
        else { return }
        routingManager.volumeChanged(for: device, volume: volumeControl.level, muted: volumeControl.isMuted)
    }

    private func session(of device: MediaOutputDevice) -> UUID? {
        active.first { $0.value.device.id == device.id }?.key
    }

    /// Writes a control point operation with the current counter; a stale counter
    /// (ATT 0x80) makes it read the state again and retry once.
    private func write(_ opcode: VolumeControl.Opcode, volume: UInt8? = nil, to id: UUID) async {
        for attempt in 1...2 {
            guard let entry = active[id], let gatt = entry.gatt, let controlPoint = entry.controlPoint,
                let value = entry.volumeControl.write(opcode, volume: volume)
            else { return }
            do {
                try await gatt.write(value, to: controlPoint, withResponse: true)
                // Our own change: the notification brings the new state; keep it in step meanwhile.
                active[id]?.volumeControl.accepted(opcode, volume: volume)
                return
            } catch where error.attErrorCode == VolumeControl.invalidChangeCounter && attempt == 1 {
                logger.info("stale change counter; reading the state again", metadata: ["device": "\(entry.device.id)"])
                try? await readState(id)
            } catch {
                logger.warning("volume write failed", metadata: ["device": "\(entry.device.id)", "error": "\(error)"])
                return
            }
        }
    }

    public func setVolume(_ volume: Float, for device: MediaOutputDevice) {
        guard let id = session(of: device) else { return }
        let fraction = min(max(volume.isFinite ? volume : 0, 0), 1)
        if active[id]?.controlPoint == nil, let audio = active[id]?.audio {
            Task { await self.setStreamVolume(fraction, audio) }
            return
        }
        Task { await self.write(.setAbsolute, volume: VolumeControl.absoluteVolume(fraction), to: id) }
    }

    public func volume(for device: MediaOutputDevice) -> Float {
        guard let id = session(of: device) else { return 0 }
        if let volumeControl = active[id]?.volumeControl, volumeControl.state != nil { return volumeControl.level }
        return transportVolume[id] ?? 0
    }

    // MARK: The audio stream

    private var transportVolume: [UUID: Float] = [:]
    /// The person's codec order per device id (``setPreferredCodecs(_:for:)``).
    private var preferredCodecs: [String: [A2DPCodec]] = [:]

    /// The codecs the person prefers for `device`: an active route whose stream runs another
    /// codec is set up again with the first of them the speaker takes and this box has
    /// (BlueZ's remote endpoint `SetConfiguration`); unknown names are skipped.
    public func setPreferredCodecs(_ codecs: [String], for device: MediaOutputDevice) {
        let known = codecs.compactMap { A2DPCodec(rawValue: $0.lowercased()) }
        preferredCodecs[device.id] = known.isEmpty ? nil : known
        guard let id = session(of: device) else { return }
        active[id]?.requestedCodec = nil
        Task { await self.followPreference(id) }
    }

    /// Moves the route's stream to the first codec of `order` (the person's preference when
    /// nil) the speaker offers, when it runs another; once per codec asked (a speaker that
    /// refuses keeps what it runs).
    private func followPreference(_ id: UUID, order given: [A2DPCodec]? = nil) async {
        guard let entry = active[id], let audio = entry.audioLink, let stream = entry.stream, stream.profile == .a2dp,
            let order = given ?? preferredCodecs[entry.device.id]
        else { return }
        let current = A2DPCodec(codecByte: stream.codec, configuration: stream.configuration)
        let remotes = await audio.remoteEndpoints()
        for codec in order where codec.missingLibrary() == nil && !entry.costlyCodecs.contains(codec) {
            if codec == current { return }
            guard let remote = remotes.first(where: { Self.endpoint($0, offers: codec) }),
                let configuration = try? codec.configuration(from: remote.capabilities)
            else { continue }
            guard active[id]?.requestedCodec != codec else { return }
            active[id]?.requestedCodec = codec
            logger.notice("asking the speaker for another codec", metadata: [
                "device": "\(entry.device.displayName)", "from": "\(Self.codecName(stream))", "to": "\(codec)",
            ])
            do {
                try await audio.configure(remote, localCodec: codec.rawValue, configuration: configuration)
            } catch {
                logger.warning("the speaker kept its codec", metadata: ["device": "\(entry.device.displayName)", "error": "\(error)"])
            }
            return
        }
    }

    /// Whether a speaker's endpoint is `codec` (vendor codecs by the identifier their element starts with).
    static func endpoint(_ endpoint: RemoteAudioEndpoint, offers codec: A2DPCodec) -> Bool {
        guard endpoint.codec == codec.codecByte else { return false }
        return codec.codecByte != 0xFF || A2DPVendorCodecID(bytes: endpoint.capabilities) == A2DPVendorCodecID(bytes: codec.sourceCapabilities)
    }

    /// Finds the device's audio stream, when it has one, follows its volume, and follows the
    /// stream itself: a speaker may set it up after the link (or on its own), and again with
    /// another codec.
    private func followAudioStream(_ id: UUID, _ audio: any AudioLink) async {
        active[id]?.audioLink = audio
        // The first value is the stream now: taken before activation completes, so a speaker
        // configured with the link is streamable at once.
        if let stream = await audio.configuration() { await streamAppeared(id, stream, audio) }
        await followPreference(id)
        let configurations = await audio.configurations()
        active[id]?.streamFollower = Task {
            for await next in configurations {
                await self.streamChanged(id, next)
            }
        }
    }

    private func streamAppeared(_ id: UUID, _ stream: AudioStreamConfiguration, _ audio: any AudioLink) async {
        active[id]?.audio = audio
        active[id]?.stream = stream
        // The codec's library loads now, with the route, not when samples start: opening
        // libavcodec (and what it links) takes a while on a small box, and samples would wait.
        if stream.profile == .a2dp, let codec = A2DPCodec(codecByte: stream.codec, configuration: stream.configuration), codec != .sbc {
            Task.detached { _ = codec.unavailability() }
        }
        if let volume = stream.volume { transportVolume[id] = volume }
        if active[id]?.transportWatcher == nil {
            let volumes = await audio.volumeChanges()
            active[id]?.transportWatcher = Task {
                for await volume in volumes { self.transportVolumeChanged(id, volume) }
            }
        }
        let waiters = active[id]?.streamWaiters ?? []
        active[id]?.streamWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    /// The speaker set its stream up (late, on its own, or again), changed what it reports of it,
    /// or took it down.
    private func streamChanged(_ id: UUID, _ stream: AudioStreamConfiguration?) async {
        guard let entry = active[id], let audio = entry.audioLink else { return }
        guard let stream else {
            if let gone = entry.stream { active[id]?.lostStream = gone }
            active[id]?.stream = nil
            active[id]?.transportWatcher?.cancel()
            active[id]?.transportWatcher = nil
            return
        }
        // The stream before: the one now, or the one that went (the transport's removal and the
        // new one's arrival may come in either order).
        let previous = entry.stream ?? entry.lostStream
        active[id]?.lostStream = nil
        // Another stream, even with the same codec (the speaker set it up again: a new transport).
        if entry.stream == nil || previous?.codec != stream.codec || previous?.configuration != stream.configuration || previous?.identity != stream.identity {
            active[id]?.streamGeneration += 1
        }
        let replaced = previous == nil || previous?.codec != stream.codec || previous?.configuration != stream.configuration
        if replaced {
            active[id]?.transportWatcher?.cancel()
            active[id]?.transportWatcher = nil
        }
        await streamAppeared(id, stream, audio)
        if let previous, replaced {
            logger.notice("the speaker set its audio stream up again", metadata: [
                "device": "\(entry.device.displayName)", "from": "\(Self.codecName(previous))", "to": "\(Self.codecName(stream))",
            ])
            routingManager.routeChanged(entry.session, reason: "codec \(Self.codecName(previous)) → \(Self.codecName(stream))")
        } else if previous == nil {
            routingManager.routeChanged(entry.session, reason: "audio stream \(Self.codecName(stream))")
        } else if previous?.reportedDelayMicroseconds != stream.reportedDelayMicroseconds, let delay = stream.reportedDelayMicroseconds {
            routingManager.routeChanged(entry.session, reason: "the speaker reports \(delay / 1000) ms of delay")
        }
        if replaced { await followPreference(id) }
        if entry.reconfiguring != nil {
            if !replaced {
                logger.notice("the speaker set its audio stream up again", metadata: [
                    "device": "\(entry.device.displayName)", "from": "\(Self.codecName(stream))", "to": "\(Self.codecName(stream))",
                ])
            }
            // Samples were flowing when the old stream went: they go on in the new one.
            active[id]?.reconfiguring?.cancel()
            active[id]?.reconfiguring = nil
            active[id]?.streamWatcher?.cancel()
            active[id]?.streamWatcher = nil
            await acquire(entry.session)
        }
    }

    /// Waits (at most ``audioStreamWait``) for the speaker to set its stream up; true when it did.
    private func waitForStream(_ id: UUID) async -> Bool {
        if active[id]?.stream != nil { return true }
        guard active[id]?.audioLink != nil else { return false }
        let wait = audioStreamWait
        let clock = self.clock
        let timer = Task {
            try? await clock.sleep(for: wait)
            self.streamWaitEnded(id)
        }
        await withCheckedContinuation { continuation in
            active[id]?.streamWaiters.append(continuation) ?? continuation.resume()
        }
        timer.cancel()
        return active[id]?.stream != nil
    }

    private func streamWaitEnded(_ id: UUID) {
        let waiters = active[id]?.streamWaiters ?? []
        active[id]?.streamWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    static func codecName(_ stream: AudioStreamConfiguration) -> String {
        if stream.profile == .a2dp, let codec = A2DPCodec(codecByte: stream.codec, configuration: stream.configuration) { return codec.description }
        return BluetoothCodec(a2dpCodec: stream.codec, bap: stream.profile == .leAudio).description
    }

    private func transportVolumeChanged(_ id: UUID, _ volume: Float) {
        guard let entry = active[id], active[id]?.controlPoint == nil else { return }
        let changed = transportVolume[id] != volume
        transportVolume[id] = volume
        if changed { routingManager.volumeChanged(for: entry.device, volume: volume, muted: false) }
    }

    private func setStreamVolume(_ fraction: Float, _ audio: any AudioLink) async {
        do {
            try await audio.setVolume(fraction)
        } catch {
            logger.warning("stream volume not set: \(error)")
        }
    }

    // MARK: Real-time samples

    public func startRealtimeSampleDelivery(session: MediaOutputSession) {
        guard active[session.id] != nil else { return }
        if active[session.id]?.sink == nil {
            active[session.id]?.sink = A2DPSampleSink(clock: clock) { [weak self] event in
                Task { await self?.sinkEvent(event, session: session) }
            }
        }
        active[session.id]?.sink?.beginAcquiring()
        Task { await self.acquire(session) }
    }

    /// Samples are encoded and sent on the thread that delivers them.
    public func realtimeSampleReceiver(session: MediaOutputSession) -> (any RealtimeSampleReceiver)? {
        active[session.id]?.sink
    }

    /// What the stream's sink saw on the delivering thread and only the actor can act on.
    private func sinkEvent(_ event: A2DPSampleSink.Event, session: MediaOutputSession) {
        guard let entry = active[session.id] else { return }
        switch event {
        case .socketClosed(let code):
            streamGone(session, reason: "the audio socket was closed (errno \(code))")
        case .bitrateStepped(let step, let before, let after, let cause, let dropped, let queued):
            routingManager.routeChanged(session, reason: "bit rate \(before / 1000) → \(after / 1000) kbit/s (\(cause))")
            logger.info("Bluetooth bit rate stepped \(step == .down ? "down" : "up")", metadata: [
                "device": "\(entry.device.displayName)", "from": "\(before)", "to": "\(after)", "dropped": "\(dropped)", "queued": "\(queued)",
            ])
        case .codecTooCostly(let overloaded):
            leaveCostlyCodec(session.id, overloadedWindows: overloaded)
        case .waitingDropped(let buffers):
            logger.info("samples that waited for the stream dropped", metadata: ["device": "\(entry.device.displayName)", "buffers": "\(buffers)"])
        }
    }

    private func acquire(_ session: MediaOutputSession) async {
        guard active[session.id] != nil else { return }
        guard await waitForStream(session.id), let entry = active[session.id], let audio = entry.audio, let stream = entry.stream else {
            guard let entry = active[session.id] else { return }
            let reason = entry.audioLink == nil
                ? "\(entry.device.displayName) has no audio stream"
                : "\(entry.device.displayName) has no audio stream: the speaker set up none (no MediaTransport1) within \(audioStreamWait)"
            active[session.id]?.sink?.stop()
            routingManager.sessionFailed(session, error: MediaDeviceError(.unsupported, reason))
            return
        }
        let codec = BluetoothCodec(a2dpCodec: stream.codec, bap: stream.profile == .leAudio)
        await entry.releasing?.value
        // Followed from before the acquisition, so that nothing the speaker does after it is missed.
        let states = await audio.states()
        do {
            let socket = try await acquireWhenOpen(audio)
            let encoder: any BluetoothAudioEncoder
            do {
                encoder = try makeBluetoothAudioEncoder(codec: codec, configuration: stream.configuration, mtu: socket.mtu)
            } catch {
                logger.warning("no encoder for the speaker's stream", metadata: ["device": "\(entry.device.displayName)", "error": "\(error)"])
                await audio.release()
                routingManager.sessionFailed(session, error: MediaDeviceError(.unsupported, error.description))
                return
            }
            let rate = A2DPCodec(codecByte: stream.codec, configuration: stream.configuration)?.sampleRate(stream.configuration) ?? 44_100
            guard let sink = active[session.id]?.sink, sink.isAcquiring else {  // stopped meanwhile
                await audio.release()
                return
            }
            let generation = active[session.id]?.streamGeneration ?? -1
            active[session.id]?.acquiredGeneration = generation
            active[session.id]?.streamUp = true
            logger.info("audio stream acquired", metadata: [
                "device": "\(entry.device.displayName)", "codec": "\(Self.codecName(stream))", "bitrate": "\(encoder.bitrate)", "mtu": "\(socket.mtu)",
            ])
            active[session.id]?.streamWatcher?.cancel()
            active[session.id]?.streamWatcher = Task {
                // `idle` counts only after this acquisition started the stream (`pending`/`active`):
                // an earlier release's `idle` may still be on its way (signals come on a
                // connection of their own, not ordered with the replies).
                var started = false
                for await state in states {
                    switch state {
                    case .pending, .active: started = true
                    case .idle where started:
                        self.streamEnded(session, "the speaker suspended the audio stream")
                        return
                    case .idle: continue
                    case .gone:
                        self.streamGone(session, reason: "the audio stream is gone")
                        return
                    }
                }
            }
            // What waited while the stream was acquired goes first (its newest 100 ms), then samples
            // flow on the delivering thread.
            // AAC costs tens of times SBC (a few percent of a core here, more than real time in
            // the HIL rig's emulated guest): encoded off the delivering thread.
            let inline = A2DPCodec(codecByte: stream.codec, configuration: stream.configuration).map { $0 != .aac } ?? false
            if !sink.start(socket: socket, encoder: encoder, sampleRate: rate, inline: inline) {
                active[session.id]?.streamUp = false
                await audio.release()
            }
        } catch {
            logger.warning("audio stream not acquired", metadata: ["device": "\(entry.device.displayName)", "error": "\(error)"])
            routingManager.sessionFailed(session, error: MediaDeviceError(.sessionFailed, "\(error)"))
        }
    }

    /// Acquires the speaker's stream, asking again every 100 ms (for at most ``audioStreamWait``)
    /// while BlueZ says it is not open yet: a speaker that sets its stream up itself configures
    /// it first (the transport appears then) and opens it a moment later, and until it does
    /// bluetoothd answers Acquire with NotAuthorized (seen in the HIL rig with bumble's sink).
    private func acquireWhenOpen(_ audio: any AudioLink) async throws(TransportError) -> PacketSocket {
        let deadline = clock.now() + audioStreamWait
        while true {
            do {
                return try await audio.acquire()
            } catch where error.code == .unavailable && clock.now() < deadline {
                try? await clock.sleep(for: .milliseconds(100))
            }
        }
    }

    /// The stream went while samples flowed (the speaker dropped the profile, or is setting the
    /// stream up again with another codec): samples wait (about a second's worth) while a new
    /// stream is awaited; none within ``audioStreamWait`` ends the session.
    private func streamGone(_ session: MediaOutputSession, reason: String) {
        guard let entry = active[session.id], entry.streamUp, let sink = entry.sink, sink.isActive else { return }
        active[session.id]?.streamUp = false
        sink.stop(awaitingAnother: true)
        // The old stream's watcher stays: a speaker that suspends (the socket closes, then the
        // transport goes idle) still ends the session with that reason.
        if let audio = entry.audio { active[session.id]?.releasing = Task { await audio.release() } }
        // The new stream may have been seen first (the transport's removal and the new one's
        // arrival come on two streams of events): then it is taken at once.
        if let now = active[session.id], now.stream != nil, now.streamGeneration != now.acquiredGeneration {
            logger.notice("the speaker's audio stream was set up again", metadata: ["device": "\(entry.device.displayName)"])
            Task { await self.acquire(session) }
            return
        }
        logger.notice("the speaker's audio stream went; waiting for it to come back", metadata: ["device": "\(entry.device.displayName)"])
        let wait = audioStreamWait
        let clock = self.clock
        active[session.id]?.reconfiguring = Task {
            try? await clock.sleep(for: wait)
            guard !Task.isCancelled else { return }
            self.reconfigurationTimedOut(session, reason)
        }
    }

    private func reconfigurationTimedOut(_ session: MediaOutputSession, _ reason: String) {
        guard active[session.id]?.reconfiguring != nil else { return }
        active[session.id]?.reconfiguring = nil
        streamEnded(session, reason)
    }

    /// The speaker ended the stream under us (suspended it, dropped the profile, closed the
    /// socket, or BlueZ left): samples stop and the route's session ends with the reason;
    /// the route itself stays while its link does.
    private func streamEnded(_ session: MediaOutputSession, _ reason: String) {
        guard let entry = active[session.id], let sink = entry.sink, sink.isActive else { return }
        sink.stop()
        active[session.id]?.streamUp = false
        active[session.id]?.streamWatcher?.cancel()
        active[session.id]?.streamWatcher = nil
        active[session.id]?.reconfiguring?.cancel()
        active[session.id]?.reconfiguring = nil
        logger.notice("audio stream ended by the speaker", metadata: ["device": "\(entry.device.displayName)", "reason": "\(reason)"])
        if let audio = entry.audio { active[session.id]?.releasing = Task { await audio.release() } }
        routingManager.sessionFailed(session, error: MediaDeviceError(.sessionFailed, "\(entry.device.displayName): \(reason)"))
    }

    /// A2DP (or LE Audio) with the codec the speaker's stream was configured for and the bit rate
    /// its encoder runs at now (the configuration's nominal one before samples flow). The
    /// speaker plays what arrives as it arrives; its latency is the delay it reports (A2DP's
    /// Delay Report) or, without one, what A2DP speakers typically buffer.
    public func routeDetails(session: MediaOutputSession) -> RouteStatus.Details {
        var details = RouteStatus.Details(timing: .asReceived, declaredLatencyMicroseconds: 150_000)
        guard let stream = active[session.id]?.stream else { return details }
        details.protocolVersion = stream.profile == .leAudio ? "LE Audio (BAP)" : "A2DP"
        details.codec = Self.codecName(stream)
        if let delay = stream.reportedDelayMicroseconds, delay > 0 { details.declaredLatencyMicroseconds = UInt64(delay) }
        if let bitrate = active[session.id]?.sink?.bitrate {
            details.bitrate = bitrate
        } else if stream.profile == .a2dp, let codec = A2DPCodec(codecByte: stream.codec, configuration: stream.configuration) {
            details.bitrate = codec.bitrate(stream.configuration)
        }
        return details
    }

    /// How often a lone A2DP route is handed its audio: 40 ms, two SBC or aptX packets per
    /// wake-up instead of one. A speaker plays packets as they come and buffers 100–200 ms, so a
    /// 40 ms burst is nothing to it (PipeWire's own A2DP sink writes bursts of its quantum), and
    /// the wake-ups are most of a stream's cost on a small box: SBC's whole path 0.89–0.98 →
    /// 0.57–0.58 % of a core, aptX 2.0–2.2 → 1.7–1.8 % (Docs/benchmarks.md). LDAC stays at delivery's 20 ms: its
    /// adaptive bit rate reads the transport's queue in packets once per buffer, tuned for a
    /// buffer of a few packets, and a 40 ms burst of its 8 ms packets would read as congestion.
    public static let a2dpDeliveryPeriod: Duration = .milliseconds(40)

    /// PCM at the rate the speaker's stream was configured for (encoded from it as is, no
    /// resampling), mono or stereo, 16-bit or float. The latency is the speaker's reported
    /// delay, or what A2DP speakers typically buffer when it reports none; delivery comes
    /// every ``a2dpDeliveryPeriod`` for every codec but LDAC.
    public func realtimeAudioSupport(session: MediaOutputSession) -> RealtimeAudioSupport {
        var support = RealtimeAudioSupport.standard
        support.latency = .milliseconds(150)
        if let stream = active[session.id]?.stream, stream.profile != .leAudio {
            if let codec = A2DPCodec(codecByte: stream.codec, configuration: stream.configuration), let rate = codec.sampleRate(stream.configuration) {
                support.sampleRates = [rate]
                if codec != .ldac { support.deliveryPeriod = Self.a2dpDeliveryPeriod }
            }
            if let delay = stream.reportedDelayMicroseconds, delay > 0 { support.latency = .microseconds(delay) }
        }
        return support
    }

    public func stopRealtimeSampleDelivery(session: MediaOutputSession) {
        guard let audio = active[session.id]?.audio, let sink = active[session.id]?.sink, sink.isActive else { return }
        if let ran = sink.stop() {
            logger.info("audio stream stopped", metadata: [
                "device": "\(active[session.id]?.device.displayName ?? "")", "dropped": "\(ran.adaptation.droppedPackets)",
                "stepsDown": "\(ran.adaptation.stepsDown)", "stepsUp": "\(ran.adaptation.stepsUp)", "bitrate": "\(ran.encoder.bitrate)",
                "overloaded": "\(ran.adaptation.overloadedWindows)",
            ])
            for packet in ran.encoder.flush() { ran.socket.send(packet) }
        }
        active[session.id]?.streamUp = false
        active[session.id]?.streamWatcher?.cancel()
        active[session.id]?.streamWatcher = nil
        active[session.id]?.reconfiguring?.cancel()
        active[session.id]?.reconfiguring = nil
        active[session.id]?.releasing = Task { await audio.release() }
    }

    /// A buffer through the actor (the route system hands them to ``realtimeSampleReceiver(session:)`` instead).
    public func receiveSamples(_ buffer: SampleBuffer, session: MediaOutputSession) {
        _ = active[session.id]?.sink?.receive(buffer)
    }

    /// The box cannot encode the route's codec in time, even at its lowest rate: rather than
    /// drop most of the audio, the speaker is asked for SBC (every A2DP sink takes it, and it
    /// costs a fiftieth of AAC here), through its own endpoint as for a preference; the
    /// codec is not asked for again while the route lasts. Once per codec.
    private func leaveCostlyCodec(_ id: UUID, overloadedWindows: Int) {
        guard let entry = active[id], let stream = entry.stream, stream.profile == .a2dp,
            let current = A2DPCodec(codecByte: stream.codec, configuration: stream.configuration),
            current != .sbc, !entry.costlyCodecs.contains(current)
        else { return }
        active[id]?.costlyCodecs.insert(current)
        logger.notice("the box cannot encode the codec in time: asking the speaker for SBC", metadata: [
            "device": "\(entry.device.displayName)", "codec": "\(Self.codecName(stream))",
            "overloaded": "\(overloadedWindows)",
        ])
        routingManager.routeChanged(entry.session, reason: "\(Self.codecName(stream)) overloads the box at every bit rate: asking for SBC")
        Task { await self.followPreference(id, order: [.sbc]) }
    }

    public func changeVolume(by increments: Int, for device: MediaOutputDevice) {
        guard let id = session(of: device), increments != 0 else { return }
        Task {
            for _ in 0..<abs(increments) {
                guard let opcode = self.active[id]?.volumeControl.step(up: increments > 0) else { return }
                await self.write(opcode, to: id)
            }
        }
    }

    public func muteDevice(_ device: MediaOutputDevice) {
        guard let id = session(of: device) else { return }
        Task { await self.write(.mute, to: id) }
    }

    public func unmuteDevice(_ device: MediaOutputDevice) {
        guard let id = session(of: device) else { return }
        Task { await self.write(.unmute, to: id) }
    }

    public func isDeviceMuted(_ device: MediaOutputDevice) -> Bool {
        guard let id = session(of: device) else { return false }
        return active[id]?.volumeControl.isMuted ?? false
    }

    // MARK: Sessions

    public func startSession(_ session: MediaOutputSession, identifier: String?, url: URL) {
        routingManager.sessionFailed(session, error: MediaDeviceError(.unsupported, "a Bluetooth speaker does not fetch URLs; stream audio to it"))
    }

    public func stopSession(_ session: MediaOutputSession) {}
    public func sendData(_ data: Data, toApplication applicationIdentifier: String, session: MediaOutputSession) {}
}

/// Where agent prompts go during one activation.
struct PromptTarget: Sendable {
    let device: MediaOutputDevice
    let session: MediaOutputSession
    let routingManager: MediaDeviceRoutingManager
}

/// Turns the device's pairing questions into the routing system's pairing
/// requests and waits for `connectUsingPairingCode`.
actor PromptBridge: PairingPromptHandler {
    private var target: PromptTarget?
    private var waiting: CheckedContinuation<String?, Never>?

    func route(to target: PromptTarget?) {
        self.target = target
        if target == nil { resume(nil) }
    }

    func answer(_ code: String?, session: UUID) {
        guard target?.session.id == session else { return }
        resume(code)
    }

    private func resume(_ code: String?) {
        waiting?.resume(returning: code)
        waiting = nil
    }

    nonisolated func answer(_ prompt: PairingPrompt) async -> PairingAnswer {
        await ask(prompt)
    }

    private func ask(_ prompt: PairingPrompt) async -> PairingAnswer {
        guard let target else { return .reject }
        let (reason, method): (String, MediaOutputDevice.AuthorizationMethod)
        switch prompt {
        case .passkeyEntry:
            (reason, method) = ("Enter the six-digit code shown on \(target.device.displayName).", .numericCode(length: .sixCharacter))
        case .pinCodeEntry:
            (reason, method) = ("Enter the PIN of \(target.device.displayName).", .password)
        case .displayPasskey(let passkey):
            (reason, method) = ("Type \(Self.sixDigits(passkey)) on \(target.device.displayName).", .confirmation(code: Self.sixDigits(passkey)))
        case .displayPinCode(let pin):
            (reason, method) = ("Type \(pin) on \(target.device.displayName).", .confirmation(code: pin))
        case .confirmation(let passkey):
            (reason, method) = ("Does \(target.device.displayName) show \(Self.sixDigits(passkey))?", .confirmation(code: Self.sixDigits(passkey)))
        case .authorization:
            (reason, method) = ("Allow \(target.device.displayName) to pair?", .confirmation(code: ""))
        }
        resume(nil)  // a question BlueZ replaced
        let code: String? = await withCheckedContinuation { continuation in
            waiting = continuation
            target.routingManager.requestPairingCode(for: target.device, session: target.session, reason: reason, authorizationMethod: method)
        }
        guard let code else { return .cancel }
        switch prompt {
        case .passkeyEntry, .pinCodeEntry: return .code(code)
        default: return code.isEmpty || code.lowercased() == "no" ? .reject : .accept
        }
    }

    static func sixDigits(_ value: UInt32) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, 6 - text.count)) + text
    }
}
