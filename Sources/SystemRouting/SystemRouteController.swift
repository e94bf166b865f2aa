#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import RoutingModel
public import MediaClock
import Synchronization

/// The app's view of routing: observe route activation, activate and deactivate
/// routes, answer pairing prompts, and open a picker.
///
/// Create one per app (or per client of the daemon) with ``init(system:applicationIdentifier:)``.
public final class SystemRouteController: Sendable {
    private struct State {
        var observers: [ObjectIdentifier: any SystemRouteControllerObserver] = [:]
        var routes: [UUID: SystemRoute] = [:]
    }

    let system: any SystemRoutingBackend
    /// What the controller's waits run on.
    let clock: any HostClock

    /// Opens one real-time delivery for `routes` playing as a group; see
    /// ``SystemRoutingBackend/acquireGroupAudio(on:format:)``.
    public func acquireGroupAudio(_ routes: [SystemRoute], format: SampleBuffer.Format) async throws -> (acquisition: AudioAcquisition, leads: [Duration]) {
        try await system.acquireGroupAudio(on: routes.map(\.session), format: format)
    }

    /// Takes `route` into the group `member` plays in, in sync; returns its lead.
    /// ``SystemRoutingBackend/joinGroupAudio(on:joining:)``.
    public func joinGroupAudio(_ route: SystemRoute, joining member: SystemRoute) async throws -> Duration {
        try await system.joinGroupAudio(on: route.session, joining: member.session)
    }
    /// Identifies this app to devices (the application launched in `.application` mode)
    /// and to the system (discovery interest).
    public let applicationIdentifier: String
    private let state = Mutex(State())
    private let pump = Mutex<Task<Void, Never>?>(nil)

    /// A controller for an in-process routing system. Subscribes to the system's
    /// events before returning, so no route event is missed.
    public convenience init(
        system: some SystemRoutingBackend, applicationIdentifier: String = "org.mediaroute.app", clock: any HostClock = SystemHostClock()
    ) async {
        await self.init(backend: system, applicationIdentifier: applicationIdentifier, clock: clock)
    }

    /// A controller over any backend, e.g. a client of `mediarouted`.
    /// - Parameter clock: what its waits (discovery before a suggestion) run on.
    public init(
        backend system: any SystemRoutingBackend, applicationIdentifier: String = "org.mediaroute.app", clock: any HostClock = SystemHostClock()
    ) async {
        self.system = system
        self.clock = clock
        self.applicationIdentifier = applicationIdentifier
        let events = await system.events()
        let task = Task { [weak self] in
            for await event in events {
                guard let self else { return }
                await self.handle(event)
            }
        }
        pump.withLock { $0 = task }
        for route in await system.activeRoutes { _ = self.route(for: route) }
    }

    deinit {
        pump.withLock { $0?.cancel() }
    }

    // MARK: Observers

    /// Adds an observer; returns false when it was already added.
    @discardableResult
    public func addObserver(_ observer: any SystemRouteControllerObserver) -> Bool {
        state.withLock { state in
            let id = ObjectIdentifier(observer)
            guard state.observers[id] == nil else { return false }
            state.observers[id] = observer
            return true
        }
    }

    /// Removes an observer; returns false when it was not added.
    @discardableResult
    public func removeObserver(_ observer: any SystemRouteControllerObserver) -> Bool {
        state.withLock { $0.observers.removeValue(forKey: ObjectIdentifier(observer)) != nil }
    }

    /// The active routes.
    public var routes: [SystemRoute] {
        state.withLock { Array($0.routes.values) }.sorted { $0.routeDisplayName < $1.routeDisplayName }
    }

    // MARK: Routing

    /// Sets who answers pairing prompts during activation (nil: prompts are cancelled).
    public func setPairingAgent(_ agent: (any PairingAgent)?) async {
        await system.setPairingAgent(agent)
    }

    /// Each discovery failure from now on: the protocol and why (a transport that
    /// cannot open here, a socket that failed), for a UI to show.
    public func discoveryFailures() async -> AsyncStream<(MediaSharingProtocol, MediaDeviceError)> {
        let events = await system.events()
        let (stream, continuation) = AsyncStream.makeStream(of: (MediaSharingProtocol, MediaDeviceError).self)
        let task = Task {
            for await event in events {
                if case .discoveryFailed(let protocolType, let error) = event { continuation.yield((protocolType, error)) }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// The devices listed now that can be activated and do `features`.
    public func availableDevices(for features: OutputDeviceDescription.Capabilities = []) async -> [SystemDevice] {
        await system.devicesList.filter { $0.isAvailable && $0.capabilities.isSuperset(of: features) }
    }

    /// The id of the merged device a route belongs to, if it is still listed.
    public func deviceID(of route: SystemRoute) async -> String? {
        await system.devicesList.first { device in device.members.contains { $0.protocolType == route.protocolType && $0.device.id == route.device.id } }?.id
    }

    /// A picker over the system's devices.
    public func makePicker(prioritizesVideoDevices: Bool = false) -> RoutePicker {
        RoutePicker(controller: self, prioritizesVideoDevices: prioritizesVideoDevices)
    }

    /// Activates a device (by picker entry id or display name) and returns its route.
    /// - Throws: ``MediaDeviceError`` from the system (see `RouteSystem.activate`).
    public func activate(
        deviceNamed nameOrID: String, protocolID: String? = nil, features: OutputDeviceDescription.Capabilities = []
    ) async throws -> SystemRoute {
        guard let key = await system.devicesList.named(nameOrID)?.key else {
            throw MediaDeviceError(.deviceNotFound, "no device \(nameOrID)")
        }
        return try await activate(key, protocolID: protocolID, features: features)
    }

    /// Activates the device with the member `key` (a picker entry's ``RoutePickerEntry/key``).
    public func activate(
        _ key: DeviceKey, protocolID: String? = nil, features: OutputDeviceDescription.Capabilities = []
    ) async throws -> SystemRoute {
        let active = try await system.activate(key, protocolID: protocolID, features: features)
        return route(for: active)
    }

    /// Deactivates a route; its sessions end.
    public func deactivate(_ route: SystemRoute) async {
        await system.deactivate(route.session)
    }

    /// Registers interest in discovery for as long as the returned token is not ended.
    func beginDiscovery(client: String) async {
        await system.beginDiscovery(client: client)
    }

    func endDiscovery(client: String) async {
        await system.endDiscovery(client: client)
    }

    // MARK: Events

    private func route(for active: ActiveRoute) -> SystemRoute {
        state.withLock { state in
            if let existing = state.routes[active.session.id] { return existing }
            let route = SystemRoute(active: active, controller: self)
            state.routes[active.session.id] = route
            return route
        }
    }

    private func existingRoute(_ active: ActiveRoute) -> SystemRoute? {
        state.withLock { $0.routes[active.session.id] }
    }

    private func handle(_ event: RouteSystemEvent) async {
        switch event {
        case .routeActivated(let active):
            await notify(SystemRouteEvent(reason: .activate, route: route(for: active), error: nil))
        case .routeDeactivated(let active, let reason):
            let route = state.withLock { $0.routes.removeValue(forKey: active.session.id) }
                ?? SystemRoute(active: active, controller: self)
            route.markInactive()
            await notify(SystemRouteEvent(reason: .deactivate, route: route, error: reason))
        case .sessionEnded(let active, let reason):
            existingRoute(active)?.sessionEnded(reason: reason)
        case .volumeChanged(let active, let volume, let muted):
            existingRoute(active)?.volumeChanged(volume: volume, muted: muted)
        case .routeData(let active, _, let data):
            existingRoute(active)?.routeDataChannel.deliver(data)
        case .sessionData(let active, _, let data):
            existingRoute(active)?.deliverSessionData(data)
        default:
            break
        }
    }

    private func notify(_ event: SystemRouteEvent) async {
        let observers = state.withLock { Array($0.observers.values) }
        for observer in observers {
            _ = await observer.systemRouteController(self, handle: event)
        }
    }
}
