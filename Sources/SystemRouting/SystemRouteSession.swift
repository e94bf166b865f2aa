#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import RoutingModel
import Synchronization
import EventBroadcast

/// A request to play a URL on a route: add it to the route, then ``start()``.
public final class SystemRouteSession: Sendable {
    private struct State {
        weak var route: SystemRoute?
        var media: SystemRouteMediaSession?
        var ended: MediaDeviceError?
        var endObservers: [CheckedContinuation<MediaDeviceError?, Never>] = []
    }

    public let url: URL
    public let mode: SystemRoute.LaunchMode
    private let state = Mutex(State())

    /// What the app says it plays; it reaches the device where the protocol carries it, and Now Playing.
    public let metadata: PlaybackMetadata

    public init(url: URL, mode: SystemRoute.LaunchMode, metadata: PlaybackMetadata = PlaybackMetadata()) {
        self.metadata = metadata
        self.url = url
        self.mode = mode
    }

    /// Starts playback on the route the session was added to.
    /// - Throws: ``MediaDeviceError`` — deviceNotActive when not added to an active route,
    ///   sessionFailed/timedOut/unsupported from the device.
    public func start() async throws -> SystemRouteMediaSession {
        guard let route = state.withLock({ $0.route }), route.isActive else {
            throw MediaDeviceError(.deviceNotActive, "add the session to an active route first")
        }
        if let media = state.withLock({ $0.media }) { return media }
        let system = route.controller.system
        let identifier = mode == .application ? route.controller.applicationIdentifier : nil
        let control = try await system.startSession(on: route.session, identifier: identifier, url: url, metadata: metadata)
        let routeSession = route.session
        // A data channel only where an application runs on the device to answer (not a renderer's player).
        let hasApplication = mode == .application ? await system.sessionApplication(on: routeSession) != nil : false
        let channel: SystemRouteDataChannel? = hasApplication
            ? SystemRouteDataChannel { data in try await system.sendSessionData(data, on: routeSession) }
            : nil
        let media = SystemRouteMediaSession(playbackControl: control, dataChannel: channel)
        state.withLock { state in
            state.media = media
            state.ended = nil
        }
        return media
    }

    /// Stops playback; the route stays active. Remove the session from the route afterwards.
    public func stop() async {
        guard let route = state.withLock({ $0.route }) else { return }
        await route.controller.system.stopSession(on: route.session)
    }

    /// The running media session, if started and not ended.
    public var mediaSession: SystemRouteMediaSession? { state.withLock { $0.media } }

    /// Waits until the session ends; returns why (nil when stopped on request).
    public func waitUntilEnded() async -> MediaDeviceError? {
        await withCheckedContinuation { continuation in
            let alreadyEnded = state.withLock { state -> Bool in
                guard state.media != nil else { return true }
                state.endObservers.append(continuation)
                return false
            }
            if alreadyEnded { continuation.resume(returning: state.withLock { $0.ended }) }
        }
    }

    func attach(to route: SystemRoute) {
        state.withLock { $0.route = route }
    }

    func detach() {
        state.withLock { $0.route = nil }
    }

    func ended(reason: MediaDeviceError?) {
        let (media, observers) = state.withLock { state in
            defer {
                state.media = nil
                state.ended = reason
                state.endObservers.removeAll()
            }
            return (state.media, state.endObservers)
        }
        media?.dataChannel?.close()
        for observer in observers { observer.resume(returning: reason) }
    }

    func deliver(_ data: Data) {
        state.withLock { $0.media }?.dataChannel?.deliver(data)
    }
}
