import Logging
import LoopbackExtension
import LoopbackTransport
import MediaClock
import MediaDevice
import RouteSystem
import Synchronization
import RoutingModel

/// Waits (in real time, at most `timeout`) until `condition` holds; returns whether it did.
@discardableResult
public func eventually(
    timeout: Duration = .seconds(5), _ condition: @Sendable () async -> Bool
) async -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while clock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return await condition()
}

/// Advances a manual clock in steps until `condition` holds (or `limit` of host time passed).
@discardableResult
public func advance(
    _ clock: ManualHostClock, by step: Duration, upTo limit: Duration, until condition: @Sendable () async -> Bool
) async -> Bool {
    let end = clock.now() + limit
    while clock.now() < end {
        if await condition() { return true }
        clock.advance(by: step)
        for _ in 0..<20 { await Task.yield() }
        try? await Task.sleep(for: .milliseconds(1))
    }
    // The clock has run its course; a loaded machine may still be handling the last step.
    return await eventually(timeout: .seconds(1)) { await condition() }
}

/// Runs a manual clock forward to `target`, stopping at every sleeper's deadline so
/// that timers fire, and time is stamped, exactly when due.
public func run(_ clock: ManualHostClock, until target: Duration) async {
    var idle = 0
    while clock.now() < target {
        // Let woken tasks run and register their next sleeps first.
        for _ in 0..<50 { await Task.yield() }
        try? await Task.sleep(for: .microseconds(200))
        if let next = clock.nextDeadline {
            idle = 0
            clock.advance(to: min(max(next, clock.now()), target))
        } else {
            idle += 1
            if idle > 20 { clock.advance(to: target) }
        }
    }
}

/// Records every event of a routing system, for assertions on order and content.
public final class EventRecorder: Sendable {
    private let recorded = Locked<[RouteSystemEvent]>([])
    private let task: Task<Void, Never>

    public init(_ system: RouteSystem) async {
        let stream = await system.events()
        let recorded = self.recorded
        task = Task {
            for await event in stream { recorded.withLock { $0.append(event) } }
        }
    }

    deinit { task.cancel() }

    public var events: [RouteSystemEvent] { recorded.withLock { $0 } }

    /// Waits for the first recorded event that `extract` maps to a value.
    public func first<T: Sendable>(
        timeout: Duration = .seconds(5), _ extract: @escaping @Sendable (RouteSystemEvent) -> T?
    ) async -> T? {
        var found: T?
        let recorded = self.recorded
        await eventually(timeout: timeout) {
            recorded.withLock { events in events.lazy.compactMap(extract).first } != nil
        }
        found = recorded.withLock { events in events.lazy.compactMap(extract).first }
        return found
    }

    /// Short names of the device-list events, in order ("found:Name", "updated:Name", "lost:Name").
    public var deviceEventNames: [String] {
        events.compactMap { event in
            switch event {
            case .deviceFound(let device): "found:\(device.displayName)"
            case .deviceUpdated(let device): "updated:\(device.displayName)"
            case .deviceLost(let device): "lost:\(device.displayName)"
            default: nil
            }
        }
    }
}

/// A pairing agent that answers from a script, or never (until cancelled).
public final class ScriptedPairingAgent: PairingAgent {
    public enum Answer: Sendable {
        case code(String)
        case cancel
        case never
    }

    private let answers: Mutex<[Answer]>
    private let requests = Mutex<[PairingRequest]>([])

    public init(_ answers: [Answer]) {
        self.answers = Mutex(answers)
    }

    public var receivedRequests: [PairingRequest] { requests.withLock { $0 } }

    public func pairingCode(for request: PairingRequest) async -> String? {
        requests.withLock { $0.append(request) }
        let answer = answers.withLock { $0.isEmpty ? .cancel : $0.removeFirst() }
        switch answer {
        case .code(let code): return code
        case .cancel: return nil
        case .never:
            try? await Task.sleep(for: .seconds(3600))
            return nil
        }
    }
}

/// A routing system with loopback extensions over one loopback transport, on a manual clock.
final class LoadedLoopbackExtensions: Sendable {
    let instances = Mutex<[LoopbackExtension]>([])
}

public struct LoopbackRig: Sendable {
    public let clock: ManualHostClock
    public let transport: LoopbackTransport
    public let system: RouteSystem
    public let recorder: EventRecorder
    private let loaded = LoadedLoopbackExtensions()

    /// The extensions the rig loaded, one per protocol, in order.
    public var extensions: [LoopbackExtension] { loaded.instances.withLock { $0 } }

    public static let tv = LoopbackDeviceSpec(
        name: "tv", displayName: "Living Room TV", kind: .tv, pin: "1234", volume: 0.4, mediaDuration: 100)
    public static let speaker = LoopbackDeviceSpec(name: "speaker", displayName: "Kitchen Speaker", kind: .speaker)

    public init(
        devices: [LoopbackDeviceSpec] = [LoopbackRig.tv, LoopbackRig.speaker],
        discoveryFailure: String? = nil,
        configuration: RouteSystem.Configuration = RouteSystem.Configuration(),
        protocols: [(MediaSharingProtocol, Bool)] = [(LoopbackExtension.defaultProtocol, true)]
    ) async throws {
        clock = ManualHostClock()
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        transport = LoopbackTransport(
            scenario: LoopbackScenario(devices: devices, discoveryFailure: discoveryFailure), clock: clock, logger: logger)
        system = RouteSystem(configuration: configuration, clock: clock, logger: logger)
        recorder = await EventRecorder(system)
        for (protocolType, simultaneous) in protocols {
            let transport = self.transport
            let clock = self.clock
            let loaded = self.loaded
            try await system.load { manager in
                let instance = LoopbackExtension(
                    transport: transport, routingManager: manager, protocolType: protocolType,
                    supportsSimultaneousSessions: simultaneous, clock: clock, logger: logger)
                loaded.instances.withLock { $0.append(instance) }
                return instance
            }
        }
    }

    /// Starts discovery and waits until `count` devices are listed.
    @discardableResult
    public func discover(expecting count: Int, client: String = "test") async -> [SystemDevice] {
        await system.beginDiscovery(client: client)
        let system = self.system
        await eventually { await system.devicesList.count >= count }
        return await system.devicesList
    }
}

/// A value behind a lock, shareable between tasks.
public final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    public init(_ value: Value) { mutex = Mutex(value) }
    public func withLock<T>(_ body: (inout Value) -> T) -> T { mutex.withLock { body(&$0) } }
    public var value: Value { mutex.withLock { $0 } }
}

/// What an extension reported, in order (the UPnP and LAN tests' log; extension
/// authors have `MediaRouteTesting.RecordingRoutingManager`).
public final class RoutingLog: Sendable {
    public init() {}
    public let events = Locked<[MediaDeviceRoutingEvent]>([])
    public var manager: MediaDeviceRoutingManager { MediaDeviceRoutingManager { [events] event in events.withLock { $0.append(event) } } }

    public func device(named name: String, timeout: Duration = .seconds(10)) async -> MediaOutputDevice? {
        await first(timeout: timeout) { event in
            if case .foundDevice(let device) = event, device.displayName == name { return device }
            return nil
        }
    }

    public func first<T: Sendable>(timeout: Duration = .seconds(10), _ extract: @escaping @Sendable (MediaDeviceRoutingEvent) -> T?) async -> T? {
        await eventually(timeout: timeout) { self.events.value.contains { extract($0) != nil } }
        return events.value.lazy.compactMap(extract).first
    }

    public func control(for session: MediaOutputSession, timeout: Duration = .seconds(10)) async -> (any InterfaceControllable)? {
        await first(timeout: timeout) { event in
            if case .started(_, let control, let started) = event, started == session { return control }
            return nil
        }
    }

    public func failure(of session: MediaOutputSession, timeout: Duration = .seconds(10)) async -> MediaDeviceError? {
        await first(timeout: timeout) { event in
            if case .sessionFailed(let failed, let error) = event, failed == session { return error }
            return nil
        }
    }

    public func lost(_ id: String, timeout: Duration = .seconds(10)) async -> Bool {
        await first(timeout: timeout) { event in
            if case .lostDevice(let device) = event, device.id == id { return true }
            return nil
        } ?? false
    }

    public func activated(_ session: MediaOutputSession) async -> Bool {
        await first { event in
            if case .activatedDevice(_, let activated) = event, activated == session { return true }
            return nil
        } ?? false
    }
}
