#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
import EventBroadcast
public import Logging
public import MediaClock
public import Transport

/// A transport whose devices are simulated in-process, with scripted behaviour
/// and injected faults, so every layer above can be tested without hardware.
///
/// Devices appear and disappear on the host clock, measured from the moment
/// the transport was created; faults can also be injected at any moment with
/// the methods under "Fault injection".
public actor LoopbackTransport: Transport {
    public nonisolated let name = "loopback"

    private let clock: any HostClock
    private let logger: Logger
    private let origin: Duration
    private var specs: [String: LoopbackDeviceSpec] = [:]
    private var present: [String: SimulatedDevice] = [:]
    private var order: [String] = []
    private var observers = ObserverTable<DiscoveryEvents.Continuation>()
    private var discoveryFailure: String?
    private var nextID: UInt64 = 0
    private var timeline: [Task<Void, Never>] = []

    /// How many discovery streams are running (for tests of discovery start/stop).
    public var activeDiscoveryCount: Int { observers.count }

    public init(
        scenario: LoopbackScenario = .standard,
        clock: any HostClock = SystemHostClock(),
        logger: Logger = Logger(label: "mediaroute.loopback")
    ) {
        self.clock = clock
        self.logger = logger
        self.origin = clock.now()
        self.discoveryFailure = scenario.discoveryFailure
        for spec in scenario.devices {
            specs[spec.name] = spec
            order.append(spec.name)
            if (spec.appearAfter ?? 0) <= 0 && (spec.disappearAfter.map { $0 > 0 } ?? true) {
                present[spec.name] = SimulatedDevice(spec: spec, clock: clock, logger: logger)
            }
        }
        let scheduled = scenario.devices
        Task { [weak self] in await self?.scheduleTimeline(scheduled) }
    }

    private func scheduleTimeline(_ scheduled: [LoopbackDeviceSpec]) {
        let start = origin
        for spec in scheduled {
            if let after = spec.appearAfter, after > 0 {
                timeline.append(Task { [weak self, clock] in
                    guard (try? await clock.sleep(until: start + .seconds(double: after))) != nil else { return }
                    await self?.addDevice(spec)
                })
            }
            if let after = spec.disappearAfter, after > 0 {
                timeline.append(Task { [weak self, clock] in
                    guard (try? await clock.sleep(until: start + .seconds(double: after))) != nil else { return }
                    await self?.removeDevice(named: spec.name)
                })
            }
        }
    }

    deinit {
        for task in timeline { task.cancel() }
    }

    // MARK: Transport

    public nonisolated func discover() -> DiscoveryEvents {
        let (stream, continuation) = DiscoveryEvents.makeStream()
        let registration = Task { await self.addObserver(continuation) }
        continuation.onTermination = { _ in
            Task {
                let id = await registration.value
                await self.removeObserver(id)
            }
        }
        return stream
    }

    /// A connection that carries the simulated device's messages (``Connection/messages``).
    public func connect(to endpoint: Endpoint) async throws(TransportError) -> any Connection {
        guard case .loopback(let name) = endpoint.address, let device = present[name] else {
            throw TransportError(.unreachable, "no simulated device at \(endpoint.id)")
        }
        if specs[name]?.refusesConnections == true {
            throw TransportError(.connectionRefused, "\(name) refused the connection")
        }
        nextID += 1
        let connection = LoopbackConnection(id: nextID, endpoint: endpoint, device: device, clock: clock)
        await device.attach(connection)
        logger.debug("connected", metadata: ["device": "\(name)", "connection": "\(nextID)"])
        return connection
    }

    /// The endpoint attribute with a speaker's audio latency, in microseconds.
    public nonisolated static let audioLatencyAttribute = "audio-latency-us"

    /// The endpoint of a simulated device, as discovery reports it.
    public func endpoint(named name: String) -> Endpoint? {
        specs[name].map(Self.endpoint(for:))
    }

    static func endpoint(for spec: LoopbackDeviceSpec) -> Endpoint {
        var attributes = spec.attributes
        if spec.audioLatency > 0, spec.audioLatency.isFinite {
            attributes[Self.audioLatencyAttribute] = String(Int(min(spec.audioLatency, 10) * 1_000_000))
        }
        return Endpoint(
            id: spec.name, transport: "loopback", address: .loopback(name: spec.name), name: spec.displayName,
            signalStrength: spec.signalStrength, attributes: attributes, services: spec.services,
            facts: EndpointFacts(kind: spec.kind == .tv ? .tv : .speaker))
    }

    // MARK: Fault injection

    /// Adds (or brings back) a device; discovery reports it as appeared.
    public func addDevice(_ spec: LoopbackDeviceSpec) {
        if present[spec.name] != nil { return }
        if specs[spec.name] == nil { order.append(spec.name) }
        specs[spec.name] = spec
        present[spec.name] = SimulatedDevice(spec: spec, clock: clock, logger: logger)
        broadcast(.appeared(Self.endpoint(for: spec)))
    }

    /// The speaker now reports `seconds` of audio latency (as an A2DP speaker's delay report
    /// does): discovery reports its endpoint updated.
    public func reportAudioLatency(_ seconds: Double, named name: String) {
        guard var spec = specs[name], present[name] != nil else { return }
        spec.audioLatency = seconds
        specs[name] = spec
        broadcast(.updated(Self.endpoint(for: spec)))
    }

    /// Removes a device: its connections fail and discovery reports it lost.
    public func removeDevice(named name: String) async {
        guard let device = present.removeValue(forKey: name) else { return }
        await device.dropAll(reason: "device disappeared")
        broadcast(.lost(endpointID: name))
    }

    /// Changes what discovery learns about a device (signal strength, attributes).
    public func updateDevice(named name: String, signalStrength: Int?, attributes: [String: String]? = nil) {
        guard var spec = specs[name], present[name] != nil else { return }
        spec.signalStrength = signalStrength
        if let attributes { spec.attributes = attributes }
        specs[name] = spec
        broadcast(.updated(Self.endpoint(for: spec)))
    }

    /// Drops every open connection to a device (the device stays discoverable).
    public func dropConnections(to name: String) async {
        await present[name]?.dropAll(reason: "connection dropped")
    }

    /// Makes a device refuse (or accept again) new connections.
    public func setRefusesConnections(_ refuses: Bool, for name: String) {
        specs[name]?.refusesConnections = refuses
    }

    /// Delays every reply and event of a device by `seconds` of host time.
    public func setReplyDelay(_ seconds: Double, for name: String) async {
        await present[name]?.setReplyDelay(seconds)
    }

    /// Someone changed the volume on the device itself.
    public func changeVolumeOnDevice(named name: String, to level: Float) async {
        await present[name]?.changeVolumeOnDevice(to: level)
    }

    /// Makes running and future discovery fail with `message` (nil: discovery works again).
    public func setDiscoveryFailure(_ message: String?) {
        discoveryFailure = message
        guard let message else { return }
        for observer in observers.removeAll() {
            observer.yield(.failed(TransportError(.discoveryFailed, message)))
            observer.finish()
        }
    }

    /// Audio frames a simulated speaker has received in total.
    public func audioFramesReceived(by name: String) async -> Int {
        await present[name]?.audioFrameCount ?? 0
    }

    /// The audio bytes a simulated speaker received, in order (the first 8 MiB).
    public func audioReceived(by name: String) async -> [UInt8] {
        await present[name]?.audioBytes ?? []
    }

    /// Number of open connections to a device.
    public func connectionCount(to name: String) async -> Int {
        await present[name]?.connectionCount ?? 0
    }

    // MARK: Observers

    /// Adds a discovery stream (nil: discovery fails, the stream has ended).
    private func addObserver(_ continuation: DiscoveryEvents.Continuation) -> UInt64? {
        if let discoveryFailure {
            continuation.yield(.failed(TransportError(.discoveryFailed, discoveryFailure)))
            continuation.finish()
            return nil
        }
        let token = observers.add(continuation)
        for name in order {
            if present[name] != nil, let spec = specs[name] {
                continuation.yield(.appeared(Self.endpoint(for: spec)))
            }
        }
        return token
    }

    private func removeObserver(_ token: UInt64?) {
        if let token { observers.remove(token) }
    }

    private func broadcast(_ event: DiscoveryEvent) {
        for observer in observers.all { observer.yield(event) }
    }
}

extension SimulatedDevice {
    func setReplyDelay(_ seconds: Double) {
        replyDelay = seconds
    }
}
