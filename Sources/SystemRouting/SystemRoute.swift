#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import RoutingModel
public import SampleSink
import Synchronization
import EventBroadcast

/// An active route to a device: start sessions on it, exchange data with its
/// extension, control its volume.
public final class SystemRoute: Sendable, Hashable, Identifiable {
    /// Who plays a session's URL on the device.
    public enum LaunchMode: String, Sendable, Hashable, Codable {
        /// The app's counterpart application on the device plays it; a session data channel exists.
        case application
        /// The device's default media player plays it; there is no session data channel.
        case player
    }

    private struct State {
        var isActive = true
        var session: SystemRouteSession?
    }

    private let volumeObservers = EventBroadcaster<(volume: Float, muted: Bool)>()

    /// The sharing protocol the route uses.
    public let protocolType: MediaSharingProtocol
    /// The device's name, for the app's interface.
    public let routeDisplayName: String
    /// A symbol for the device type (`tv`, `hifispeaker`, …).
    public let routeSymbolName: String
    /// The device, as apps see it.
    public let device: OutputDeviceDescription
    /// The system's session for this activation.
    public let session: MediaOutputSession
    /// Data between the app and the route's extension, available while the route is active.
    public let routeDataChannel: SystemRouteDataChannel
    let controller: SystemRouteController
    private let state = Mutex(State())

    init(active: ActiveRoute, controller: SystemRouteController) {
        protocolType = active.protocolType
        routeDisplayName = active.device.displayName
        routeSymbolName = active.device.deviceType.symbolName
        device = active.device
        session = active.session
        self.controller = controller
        let system = controller.system
        let session = active.session
        let application = controller.applicationIdentifier
        routeDataChannel = SystemRouteDataChannel { data in
            try await system.sendRouteData(data, fromApplication: application, on: session)
        }
    }

    public var id: UUID { session.id }

    public static func == (lhs: SystemRoute, rhs: SystemRoute) -> Bool { lhs.session == rhs.session }
    public func hash(into hasher: inout Hasher) { hasher.combine(session) }

    /// Whether the route is still active.
    public var isActive: Bool { state.withLock { $0.isActive } }

    // MARK: Sessions

    /// Adds a session to the route; false when the route is inactive or already has one
    /// (a route plays one URL session at a time; stop and remove it first).
    @discardableResult
    public func addSession(_ session: SystemRouteSession) -> Bool {
        let added = state.withLock { state -> Bool in
            guard state.isActive, state.session == nil else { return false }
            state.session = session
            return true
        }
        if added { session.attach(to: self) }
        return added
    }

    /// Removes a session; false when it was not this route's session.
    @discardableResult
    public func removeSession(_ session: SystemRouteSession) -> Bool {
        let removed = state.withLock { state -> Bool in
            guard state.session === session else { return false }
            state.session = nil
            return true
        }
        if removed { session.detach() }
        return removed
    }

    /// The session added to the route, if any.
    public var currentSession: SystemRouteSession? { state.withLock { $0.session } }

    // MARK: Volume

    /// Sets an absolute volume, 0.0–1.0. Refused for relative-only devices.
    public func setVolume(_ volume: Float) async throws {
        try await controller.system.setVolume(volume, on: session)
    }

    /// Raises or lowers the volume by steps.
    public func changeVolume(by increments: Int) async throws {
        try await controller.system.changeVolume(by: increments, on: session)
    }

    /// Mutes or unmutes the device.
    public func setMuted(_ muted: Bool) async throws {
        try await controller.system.setMuted(muted, on: session)
    }

    /// The device's volume and mute state.
    public func volume() async throws -> (volume: Float, muted: Bool) {
        try await controller.system.volume(on: session)
    }

    /// Volume and mute changes, whether made through the system or on the device itself.
    public func volumeChanges() -> AsyncStream<(volume: Float, muted: Bool)> {
        volumeObservers.subscribe()
    }

    // MARK: Real-time samples

    /// Starts real-time sample delivery to the device; send buffers through the sink.
    public func startRealtimeSampleDelivery() async throws -> RealtimeSampleSink {
        try await controller.system.startRealtimeSampleDelivery(on: session)
    }

    /// Stops real-time sample delivery.
    public func stopRealtimeSampleDelivery() async {
        await controller.system.stopRealtimeSampleDelivery(on: session)
    }

    /// Opens paced delivery of `format` and returns the descriptor to write PCM into
    /// (the caller owns and closes it; closing ends the stream once it played out).
    /// - Throws: ``MediaDeviceError`` `unsupported` naming the formats the device takes.
    public func acquireAudio(format: SampleBuffer.Format) async throws -> AudioAcquisition {
        try await controller.system.acquireAudio(on: session, format: format)
    }

    /// Opens real-time video of `format` and returns the descriptor to write pictures into (the
    /// caller owns and closes it; closing ends the video).
    /// - Throws: ``MediaDeviceError`` `unsupported` when the device shows no video the box sends.
    public func acquireVideo(format: VideoFrameFormat) async throws -> VideoAcquisition {
        try await controller.system.acquireVideo(on: session, format: format)
    }

    /// Ends the real-time video now.
    public func releaseVideo() async {
        await controller.system.releaseVideo(on: session)
    }

    /// Says what the real-time audio is (title, artist, album, duration, position, artwork),
    /// for a device that shows it.
    public func setNowPlaying(_ nowPlaying: RealtimeNowPlaying) async throws {
        try await controller.system.setRealtimeNowPlaying(nowPlaying, on: session)
    }

    /// How the route plays: protocol and version, timing, codec and bit rate, format,
    /// declared and measured latency, real-time delivery. Nil once the route ended.
    public func status() async -> RouteStatus? {
        await controller.system.routeStatus(on: session)
    }

    /// How real-time delivery goes (frames, underruns, latency); nil when none was acquired.
    public func audioStatistics() async -> RealtimeAudioStatistics? {
        await controller.system.audioStatistics(on: session)
    }

    /// Waits until real-time audio on the route has ended (its writer closed the stream and
    /// what was written played out), at most `timeout` on the controller's clock, and returns
    /// the delivery's statistics then; at once when no delivery is active. Nil when none was
    /// acquired. The end is an event of the routing system (`audioEnded`), not polled.
    public func audioEnded(within timeout: Duration) async -> RealtimeAudioStatistics? {
        // Subscribed first, so an end between the check below and the wait is not missed.
        let events = await controller.system.events()
        guard let statistics = await audioStatistics(), statistics.active else { return await audioStatistics() }
        let session = self.session
        let clock = controller.clock
        let deadline = clock.now() + timeout
        let ended = await withTaskGroup(of: RealtimeAudioStatistics?.self) { group in
            group.addTask {
                for await event in events {
                    if case .audioEnded(let route, let statistics) = event, route.session == session { return statistics }
                }
                return nil
            }
            group.addTask {
                try? await clock.sleep(until: deadline)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        if let ended { return ended }
        return await audioStatistics()
    }

    // MARK: From the controller

    func volumeChanged(volume: Float, muted: Bool) {
        volumeObservers.yield((volume, muted))
    }

    func sessionEnded(reason: MediaDeviceError?) {
        currentSession?.ended(reason: reason)
    }

    func deliverSessionData(_ data: Data) {
        currentSession?.deliver(data)
    }

    func markInactive() {
        let session = state.withLock { state in
            state.isActive = false
            return state.session
        }
        session?.ended(reason: MediaDeviceError(.deviceNotActive, "the route ended"))
        routeDataChannel.close()
        volumeObservers.finish()
    }
}

extension Sequence<SystemRoute> {
    /// The route to the device `nameOrID` names, by the rule every device list follows
    /// (``DeviceNameMatching``: the device's id, else its name with case and spacing ignored).
    public func named(_ nameOrID: String) -> SystemRoute? {
        DeviceNameMatching.first(in: self, named: nameOrID, id: \.device.id, displayName: \.routeDisplayName)
    }
}
