public import Logging
public import MediaClock
public import Transport

/// Wi-Fi as a transport: nl80211 scans on the box's Wi-Fi interfaces find
/// Wi-Fi Display (Miracast) sinks and speakers or TVs in setup mode.
///
/// Without nl80211 in the kernel the transport says so: discovery reports
/// `.failed(.unavailable)` with the reason, and the rest of the system runs on.
/// Connecting is not supported yet (Miracast sessions and device setup are
/// separate work) and fails with a clear `unavailable` error.
public actor WiFiTransport: Transport {
    public struct Configuration: Sendable {
        /// Interface indexes to scan (the adapter inventory's Wi-Fi adapters).
        public var interfaceIndexes: [UInt32]
        /// Probe for P2P devices on the social channels instead of a plain active scan.
        public var p2p: Bool
        public var setupSSIDPatterns: [String]
        /// First pause between scans; it doubles after a scan that found nothing new, up to ``maximumInterval``.
        public var initialInterval: Duration
        public var maximumInterval: Duration
        /// A device not seen for this long is lost.
        public var resultLifetime: Duration

        public init(
            interfaceIndexes: [UInt32], p2p: Bool = true, setupSSIDPatterns: [String] = [], initialInterval: Duration = .seconds(5),
            maximumInterval: Duration = .seconds(60), resultLifetime: Duration = .seconds(120)
        ) {
            self.interfaceIndexes = interfaceIndexes
            self.p2p = p2p
            self.setupSSIDPatterns = setupSSIDPatterns
            self.initialInterval = initialInterval
            self.maximumInterval = maximumInterval
            self.resultLifetime = resultLifetime
        }
    }

    public nonisolated let name = "wifi"
    public nonisolated let configuration: Configuration
    private let scanner: Result<any WiFiScanning, TransportUnavailable>
    private let clock: any HostClock
    private let logger: Logger
    private let mapper: WiFiDeviceMapper
    /// How many scans ran (for tests of the schedule).
    public private(set) var scansRun = 0

    /// - Parameter scanner: nil to use nl80211 (resolved now; its absence makes the transport unavailable).
    public init(configuration: Configuration, scanner: (any WiFiScanning)? = nil, clock: any HostClock = SystemHostClock(),
                logger: Logger = Logger(label: "mediaroute.wifi")) {
        self.configuration = configuration
        if let scanner {
            self.scanner = .success(scanner)
        } else {
            self.scanner = NL80211Family.resolve().map { NL80211Scanner(family: $0) as any WiFiScanning }
        }
        self.clock = clock
        self.logger = logger
        self.mapper = WiFiDeviceMapper(setupSSIDPatterns: configuration.setupSSIDPatterns)
    }

    /// Why the transport cannot run here, or nil when it can.
    public var unavailableReason: String? {
        if case .failure(let reason) = scanner { return reason.reason }
        return nil
    }

    public nonisolated func discover() -> DiscoveryEvents {
        DiscoveryEvents { continuation in
            let task = Task { await self.runDiscovery(continuation) }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    private func runDiscovery(_ continuation: DiscoveryEvents.Continuation) async {
        let scanner: any WiFiScanning
        switch self.scanner {
        case .failure(let reason):
            logger.notice("Wi-Fi transport unavailable: \(reason.reason)")
            continuation.yield(.failed(TransportError(.unavailable, reason.reason)))
            continuation.finish()
            return
        case .success(let available):
            scanner = available
        }
        var known: [String: (endpoint: Endpoint, lastSeen: Duration)] = [:]
        var interval = configuration.initialInterval
        while !Task.isCancelled {
            var foundNew = false
            for index in configuration.interfaceIndexes {
                scansRun += 1
                let results: [ScanResult]
                do {
                    results = try await scanner.scan(interfaceIndex: index, p2p: configuration.p2p)
                } catch {
                    logger.warning("Wi-Fi scan failed", metadata: ["interface": "\(index)", "reason": "\(error.reason)"])
                    continue
                }
                let now = clock.now()
                for result in results {
                    guard var endpoint = mapper.endpoint(for: result) else { continue }
                    if case .wifi(let bssid, 0) = endpoint.address { endpoint.address = .wifi(bssid: bssid, interfaceIndex: Int32(bitPattern: index)) }
                    // The kernel's "seen ago" dates the sighting.
                    let seen = now - .milliseconds(Int64(result.seenMillisecondsAgo ?? 0))
                    if let previous = known[endpoint.id] {
                        if previous.endpoint != endpoint { continuation.yield(.updated(endpoint)) }
                        known[endpoint.id] = (endpoint, max(previous.lastSeen, seen))
                    } else {
                        known[endpoint.id] = (endpoint, seen)
                        foundNew = true
                        continuation.yield(.appeared(endpoint))
                    }
                }
            }
            let now = clock.now()
            for (id, entry) in known where now - entry.lastSeen > configuration.resultLifetime {
                known.removeValue(forKey: id)
                continuation.yield(.lost(endpointID: id))
            }
            interval = foundNew ? configuration.initialInterval : min(interval * 2, configuration.maximumInterval)
            do {
                try await clock.sleep(for: interval)
            } catch {
                break
            }
        }
        continuation.finish()
    }

    public func connect(to endpoint: Endpoint) async throws(TransportError) -> any Connection {
        throw TransportError(.unavailable, endpoint.facts.kind == .setupAccessPoint
            ? "\(endpoint.name ?? endpoint.id) needs setup; device setup over its access point is not supported yet"
            : "Miracast sessions with \(endpoint.name ?? endpoint.id) are not supported yet")
    }
}
