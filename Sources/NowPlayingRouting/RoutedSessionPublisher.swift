#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
public import Logging
public import MediaClock
import MediaDevice
public import NowPlaying
public import RouteSystem
import Synchronization
import RoutingModel

/// Publishes a remote session in a ``NowPlayingCenter`` for every URL session
/// the routing system plays, fed from its `PlaybackControl`, and ends it when
/// the session or its route ends. A TV started with `mediaroutectl play`
/// appears in Now Playing (and so in MPRIS) with no code in the extension.
public actor RoutedSessionPublisher {
    /// The push topic routed sessions are registered under (they are not started by push).
    public static let topic = "org.mediaroute.route"

    private let system: RouteSystem
    private let center: NowPlayingCenter
    private let clock: any HostClock
    private let logger: Logger
    private let pending = Mutex<[String: (ActiveRoute, any InterfaceControllable)]>([:])
    private var follower: Task<Void, Never>?
    private var published: Set<String> = []

    public init(system: RouteSystem, center: NowPlayingCenter, clock: any HostClock = SystemHostClock(),
                logger: Logger = Logger(label: "mediaroute.nowplaying.routes")) {
        self.system = system
        self.center = center
        self.clock = clock
        self.logger = logger
    }

    /// Registers the routed-session extension and follows the system, publishing sessions already playing.
    public func start() async throws {
        try await center.register(RoutedSessionExtension(publisher: self))
        let events = await system.events()
        follower = Task { [weak self] in
            for await event in events { await self?.handle(event) }
        }
        for route in await system.activeRoutes {
            if await system.playbackControl(for: route.session) != nil { await publish(route) }
        }
    }

    public func stop() async {
        follower?.cancel()
        follower = nil
        for id in published { try? await center.end(sessionID: id) }
        published.removeAll()
    }

    private func handle(_ event: RouteSystemEvent) async {
        switch event {
        case .sessionStarted(let route, _):
            await publish(route)
        case .sessionEnded(let route, _), .routeDeactivated(let route, _):
            await unpublish(route)
        default:
            break
        }
    }

    private func publish(_ route: ActiveRoute) async {
        let id = route.session.id.uuidString
        guard !published.contains(id), let control = await system.playbackControl(for: route.session) else { return }
        pending.withLock { $0[id] = (route, control) }
        defer { _ = pending.withLock { $0.removeValue(forKey: id) } }
        let attributes = RoutedSessionAttributes(
            id: id, deviceID: route.device.id, deviceName: route.device.displayName, protocolName: route.protocolType.displayName)
        do {
            try await center.start(attributes: attributes)
            published.insert(id)
            // What a person just started is what Now Playing should show.
            try await center.requestToBecomeSystemPrimary(sessionID: id)
        } catch {
            logger.warning("routed session not published", metadata: ["session": "\(id)", "error": "\(error)"])
        }
    }

    private func unpublish(_ route: ActiveRoute) async {
        let id = route.session.id.uuidString
        guard published.remove(id) != nil else { return }
        try? await center.end(sessionID: id)
    }

    nonisolated func session(for attributes: RoutedSessionAttributes) throws -> RoutedSession {
        guard let (route, control) = pending.withLock({ $0[attributes.id] }) else {
            throw RemoteMediaSessionError(.sessionNotFound, "no URL session \(attributes.id) on a route")
        }
        return RoutedSession(route: route, control: control, system: system, clock: clock)
    }
}

/// The extension that turns routed-session attributes into ``RoutedSession``s.
struct RoutedSessionExtension: RemoteMediaSessionExtension {
    let publisher: RoutedSessionPublisher

    var configuration: RemoteMediaSessionExtensionConfiguration<Self> {
        RemoteMediaSessionExtensionConfiguration(extension: self, topic: RoutedSessionPublisher.topic, acceptsPushes: false)
    }

    func session(_ attributes: RoutedSessionAttributes) async throws -> RoutedSession {
        try publisher.session(for: attributes)
    }
}
