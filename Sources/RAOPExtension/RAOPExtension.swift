#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import Logging
import Synchronization
public import MediaClock
public import MediaDevice
public import RoutingModel
import HAP
import RAOP
public import Transport

/// AirPlay 1 receivers (RAOP): speakers announced as `_raop._tcp` over mDNS, played to in
/// real time: the route's samples, paced by the daemon, go out as ALAC in RTP to the
/// receiver, which plays them two seconds later.
///
/// Activation opens the RTSP connection (`OPTIONS`); samples starting announce, set up and
/// record a stream (``RAOPStream``); samples stopping tear it down; volume is
/// `SET_PARAMETER`; what plays (title, artist, album, artwork, progress) goes to receivers
/// whose `md` says they show it; a pause or a jump in the app's source is a `FLUSH`. A
/// receiver that asks for a password gets it through the pairing flow (digest
/// authentication); one that takes only encryption we do not offer is listed unavailable.
public actor RAOPExtension: RealtimeSampleHandling {
    public static let defaultProtocol = MediaSharingProtocol("org.mediaroute.raop", displayName: "AirPlay")
    public static let serviceType = "_raop._tcp"
    /// The same receivers' AirPlay 2 service: merged into the `_raop._tcp` speaker by the
    /// hardware address both names carry; alone, a receiver MediaRoute cannot play to.
    public static let airPlayServiceType = "_airplay._tcp"

    private struct Active {
        var device: MediaOutputDevice
        var session: MediaOutputSession
        var connection: (any Connection)?
        var rtsp: RTSPClient?
        var stream: RAOPStream?
        /// A stream whose samples stopped, playing out what it sent before its TEARDOWN.
        var draining: RAOPStream?
        /// Samples, flushes and metadata to the stream, in order (one consumer), at most ``queuedBuffers`` behind.
        var feed: AsyncStream<StreamItem>.Continuation?
        /// Counts flushes asked for; the feed's consumer reads it before each item, so a flush is never
        /// lost to a full feed and the samples queued before it are dropped rather than sent.
        var flushes = FlushCounter()
        /// What plays, as the app last said; sent to each new stream.
        var nowPlaying: RealtimeNowPlaying?
        /// The receiver's challenge while the person is asked for its password.
        var challenge: RTSPDigestChallenge?
        /// The new host while the person is asked to confirm that the receiver moved there.
        var movedTo: (endpoint: Endpoint, host: String)?
        /// Samples wait here while the stream is being set up (about a second at most).
        var waiting: [([UInt8], Duration)] = []
        var streaming = false
        var volume: Float = 0.5
        var watcher: Task<Void, Never>?
        /// Played with AirPlay 2 (paired over HAP, the RTSP connection encrypted) and timed by
        /// PTP or NTP; nil: AirPlay 1.
        var airPlay2Timing: RouteStatus.Timing?
        var airPlay2: Bool { airPlay2Timing != nil }
        /// AirPlay 2: the encrypted stream the RTSP client speaks over while pairing switches it.
        var hapStream: HAPByteStream?
        /// AirPlay 2: waiting for the PIN the receiver shows.
        var awaitingPIN = false
        /// AirPlay 1 (an Apple TV's device verification): waiting for the PIN it shows, to pair at this endpoint.
        var awaitingVerificationPIN: Endpoint?
        /// AirPlay 2: the pairing's shared secret, which the event channel's keys come from.
        var pairingSecret: [UInt8]?
        /// AirPlay 2: the receiver's event channel while a stream plays (its requests answered).
        var events: (any Connection)?
    }

    enum StreamItem: Sendable {
        /// Samples written before flush number `flushes` was asked for.
        case pcm([UInt8], presentationTime: Duration, flushes: UInt64)
        /// Wakes an idle consumer to a flush; when the feed is full it is dropped, and the
        /// consumer sees the flush before its next item.
        case flush
        case nowPlaying(RealtimeNowPlaying)
    }

    /// Buffers queued to a stream before new ones are dropped (half a second of 20 ms buffers).
    static let queuedBuffers = 25

    public nonisolated let protocolType: MediaSharingProtocol
    /// Each receiver is a session of its own: several play at once (a group).
    public nonisolated var supportsSimultaneousSessions: Bool { true }
    /// How long after its sending a packet plays: the receivers' buffer against the network.
    private let latencyFrames: UInt32
    private let transport: any Transport
    private let routingManager: MediaDeviceRoutingManager
    private let logger: Logger
    private let clock: any HostClock
    private let discovery = DiscoveryDriver()
    /// Each receiver's services by endpoint id, and the device reported for it by device id.
    private var services: [String: Endpoint] = [:]
    private var reported: [String: MediaOutputDevice] = [:]
    private var active: [UUID: Active] = [:]
    /// Passwords receivers accepted, by device id *and* the address it was given at, while the
    /// daemon runs (never written anywhere): a host that later claims the device's identity is
    /// not answered with the password's digest; the person is asked again.
    private var passwords: [String: String] = [:]
    /// The host each receiver was first used at (trust on first use, in the state directory):
    /// AirPlay 1 has no key of its own to tell a receiver from a host that copies its name
    /// and hardware address, so a receiver that answers from another host is a prompt, never
    /// a silent switch.
    private let hostPins: PinFile
    /// Hosts receivers answered from in place of their pinned one, by device id (at most 64):
    /// what `trust accept` pins.
    private var offeredHosts: [String: (host: String, name: String)] = [:]
    /// AirPlay 2: the PTP master streams are timed by (nil: AirPlay 2 receivers cannot be played).
    private let timing: (any AirPlayTimingMaster)?
    /// AirPlay 2: our long-term pairing identity and the receivers paired with a PIN.
    private let pairings: AirPlayPairings
    /// The configuration's protocol overrides, by device name or hardware address.
    private let choices: [String: AirPlayProtocolChoice]
    /// AirPlay 2: the device id we give receivers and the group our streams play in.
    private let senderID: String = (0..<6).map { _ in
        let hex = String(UInt8.random(in: .min ... .max), radix: 16, uppercase: true)
        return hex.count == 1 ? "0" + hex : hex
    }.joined(separator: ":")
    private let groupUUID = UUID().uuidString
    /// Buffers dropped because a stream was behind or not set up yet (all routes), and when that was last logged.
    private var droppedBuffers = 0
    private var lastDropLog: Duration = .seconds(-3600)

    /// The host a device is reached at.
    private static func host(of device: MediaOutputDevice) -> String? {
        guard let endpoint = device.requiredNetworkEndpoints.first(where: { serviceType(of: $0) == serviceType }) ?? device.requiredNetworkEndpoints.first,
            case .ip(let host, _, _) = endpoint.address
        else { return nil }
        return host
    }

    /// The key a password is kept under: the device and the host it is reached at.
    private static func passwordKey(for device: MediaOutputDevice) -> String? {
        host(of: device).map { device.id + "@" + $0 }
    }

    /// - Parameters:
    ///   - transport: where receivers are found (mDNS `_raop._tcp` endpoints) and connected (TCP, UDP).
    ///   - latency: how long after its sending a packet plays (0.25 s at least): iTunes' two
    ///     seconds ride out a Wi-Fi network's hiccups; a quarter second starts sooner.
    ///   - hostPinsPath: where the host each receiver was first used at is kept (nil: in memory).
    ///   - timing: the PTP master AirPlay 2 streams are timed by; without one, receivers that
    ///     want AirPlay 2 are played with AirPlay 1 where they take it, else refused.
    ///   - pairingKeysDirectory: where the keys of receivers paired with a PIN are kept, one
    ///     file (0600) per receiver (nil: in memory, paired again after a restart).
    ///   - protocols: the protocol to play a receiver with whatever its `features` say, by its
    ///     name or hardware address (`[lan] airplay-protocols`).
    ///   - clock: what connection retries, request timeouts and the streams' timers run on.
    public init(
        transport: any Transport, routingManager: MediaDeviceRoutingManager, protocolType: MediaSharingProtocol = RAOPExtension.defaultProtocol,
        latency: Duration = .seconds(2), hostPinsPath: String? = nil, timing: (any AirPlayTimingMaster)? = nil, pairingKeysDirectory: String? = nil,
        protocols: [String: AirPlayProtocolChoice] = [:], clock: any HostClock = SystemHostClock(), logger: Logger = Logger(label: "mediaroute.extension.raop")
    ) {
        self.timing = timing
        choices = protocols
        pairings = AirPlayPairings(directory: pairingKeysDirectory, logger: logger)
        self.clock = clock
        hostPins = PinFile(path: hostPinsPath)
        let (seconds, attoseconds) = latency.components
        let frames = seconds.multipliedReportingOverflow(by: Int64(RAOPStream.sampleRate)).partialValue
            + attoseconds / (1_000_000_000_000_000_000 / Int64(RAOPStream.sampleRate))
        latencyFrames = UInt32(clamping: max(Int64(RAOPStream.minimumLatencyFrames), min(frames, Int64(10 * RAOPStream.sampleRate))))
        self.transport = transport
        self.routingManager = routingManager
        self.protocolType = protocolType
        self.logger = logger
    }

    // MARK: Discovery

    /// The service type of an endpoint (`_raop._tcp` or `_airplay._tcp`), nil for others.
    static func serviceType(of endpoint: Endpoint) -> String? {
        for type in [serviceType, airPlayServiceType]
        where endpoint.services.contains(where: { $0.hasPrefix(type) }) || endpoint.attributes["serviceType"]?.hasPrefix(type) == true
            || endpoint.id.hasSuffix(".\(type).local")
        {
            return type
        }
        return nil
    }

    /// The instance name of an endpoint without its service type and domain.
    static func instance(of endpoint: Endpoint, type: String) -> String {
        endpoint.id.hasSuffix(".\(type).local") ? String(endpoint.id.dropLast(type.count + 7)) : endpoint.id
    }

    /// The receiver's hardware address: the hex before the `@` of a `_raop._tcp` name
    /// (`AABBCCDDEEFF@Kitchen`), or the `deviceid` of an `_airplay._tcp` record.
    static func hardwareAddress(of endpoint: Endpoint) -> String? {
        guard let type = serviceType(of: endpoint) else { return nil }
        if type == serviceType {
            let parts = instance(of: endpoint, type: type).split(separator: "@", maxSplits: 1)
            return parts.count == 2 ? DeviceIdentifier.normalizedAddress(String(parts[0])) : nil
        }
        return endpoint.attributes["deviceid"].flatMap(DeviceIdentifier.normalizedAddress)
    }

    /// A speaker for one receiver from its services: the `_raop._tcp` one (named after the
    /// `@`) to play to, the `_airplay._tcp` one (named as it is) for what it adds. Its id is
    /// the hardware address both carry, so the two services are one device whichever came first.
    /// `choices` are the configuration's protocol overrides, by the device's name or hardware address.
    public static func device(for endpoints: [Endpoint], choices: [String: AirPlayProtocolChoice] = [:]) -> MediaOutputDevice? {
        var raop = endpoints.first { serviceType(of: $0) == serviceType }
        let airPlay = endpoints.first { serviceType(of: $0) == airPlayServiceType }
        guard let primary = raop ?? airPlay, case .ip = primary.address else { return nil }
        let address = hardwareAddress(of: primary) ?? airPlay.flatMap(hardwareAddress(of:))
        if let address, var endpoint = raop, !endpoint.identifiers.contains(.mac(address)) {
            endpoint.identifiers.append(.mac(address))
            raop = endpoint
        }
        let name: String
        if let raop {
            let parts = instance(of: raop, type: serviceType).split(separator: "@", maxSplits: 1)
            name = parts.count == 2 ? String(parts[1]) : instance(of: raop, type: serviceType)
        } else {
            name = instance(of: primary, type: airPlayServiceType)
        }
        let choice = choices[name] ?? address.flatMap { choices[$0] }
        // What it can do, from `features` (the AirPlay record) or `ft` (the RAOP one).
        let features = airPlay.flatMap { AirPlayFeatures(attributes: $0.attributes) } ?? raop.flatMap { AirPlayFeatures(attributes: $0.attributes) }
        let timing = airPlay2Timing(airPlay: airPlay, choice: choice)
        var unavailable: String?
        if let reason = features?.unplayableReason {
            unavailable = reason
        } else if timing == nil, let raop {
            if let codecs = raop.attributes["cn"], !codecs.split(separator: ",").contains("1") {
                unavailable = "it does not take ALAC"
            } else if let encryptions = raop.attributes["et"], !encryptions.split(separator: ",").contains("0") {
                unavailable = "it takes only encrypted streams"
            }
        } else if timing == nil {
            unavailable = choice == .airPlay1
                ? "it is set to AirPlay 1 in the configuration and announces no AirPlay 1 service"
                : "it announces no AirPlay 2 pairing (features bit 48) and no AirPlay 1 service"
        } else if airPlay == nil {
            unavailable = "it is set to AirPlay 2 in the configuration and announces no AirPlay 2 service"
        }
        let model = (airPlay?.attributes["model"] ?? raop?.attributes["am"])?.lowercased() ?? ""
        let type: MediaOutputDevice.DeviceType = model.hasPrefix("appletv") ? .setTopBox : .speaker
        return MediaOutputDevice(
            id: address ?? primary.id, displayName: name, capabilities: [.realtimeAudioStreaming], deviceType: type,
            volumeControl: .absolute, canMute: true, requiredNetworkEndpoints: [raop, airPlay].compactMap { $0 }, unavailableReason: unavailable)
    }

    /// How a receiver is played: nil for AirPlay 1; for AirPlay 2 — where its `_airplay._tcp`
    /// record has bit 48 (HAP pairing and encryption), as HomePods, Apple TVs and shairport-sync
    /// 5 announce — `.ptp` with bit 41 and `.ntp` without it. `choice` overrides both.
    static func airPlay2Timing(airPlay: Endpoint?, choice: AirPlayProtocolChoice?) -> RouteStatus.Timing? {
        let features = airPlay.flatMap { AirPlayFeatures(attributes: $0.attributes) }
        switch choice {
        case .airPlay1: return nil
        case .airPlay2PTP, .airPlay2Buffered: return .ptp
        case .airPlay2NTP: return .ntp
        case .airPlay2: return features?.usesPTP == true ? .ptp : .ntp
        case nil:
            guard let features, features.prefersAirPlay2, features.unplayableReason == nil else { return nil }
            return features.usesPTP ? .ptp : .ntp
        }
    }

    /// How `device` is played (see ``airPlay2Timing(airPlay:choice:)``): nil for AirPlay 1,
    /// else the AirPlay 2 timing.
    public static func airPlay2Timing(of device: MediaOutputDevice, choice: AirPlayProtocolChoice? = nil) -> RouteStatus.Timing? {
        airPlay2Timing(airPlay: device.requiredNetworkEndpoints.first { serviceType(of: $0) == airPlayServiceType }, choice: choice)
    }

    /// Whether `device` is played with AirPlay 2 (by its `features`, without overrides).
    public static func usesAirPlay2(_ device: MediaOutputDevice) -> Bool {
        airPlay2Timing(of: device) != nil
    }

    /// A speaker for a single service (see ``device(for:)-([Endpoint])``).
    public static func device(for endpoint: Endpoint) -> MediaOutputDevice? {
        device(for: [endpoint])
    }

    public func startDeviceDiscovery() {
        discovery.start(transport) { await self.handle($0) }
    }

    public func stopDeviceDiscovery() {
        discovery.stop()
    }

    /// The device id an endpoint belongs to.
    private func deviceID(of endpoint: Endpoint) -> String {
        Self.hardwareAddress(of: endpoint) ?? endpoint.id
    }

    private func handle(_ event: DiscoveryEvent) {
        switch event {
        case .appeared(let endpoint), .updated(let endpoint):
            guard Self.serviceType(of: endpoint) != nil else { return }
            if let previous = services[endpoint.id], deviceID(of: previous) != deviceID(of: endpoint) {
                services[endpoint.id] = nil
                report(deviceID(of: previous))
            }
            services[endpoint.id] = endpoint
            report(deviceID(of: endpoint))
        case .lost(let endpointID):
            guard let endpoint = services.removeValue(forKey: endpointID) else { return }
            report(deviceID(of: endpoint))
        case .failed(let error):
            routingManager.discoveryFailed(MediaDeviceError(.discoveryFailed, "AirPlay: " + error.message))
        }
    }

    /// Reports the device `id` as its services now make it: found, updated or lost.
    private func report(_ id: String) {
        let endpoints = services.values.filter { deviceID(of: $0) == id }.sorted { $0.id < $1.id }
        guard let device = endpoints.isEmpty ? nil : Self.device(for: endpoints, choices: choices) else {
            if let gone = reported.removeValue(forKey: id) { routingManager.lostDevice(gone) }
            return
        }
        if reported.updateValue(device, forKey: device.id) == nil {
            routingManager.foundDevice(device)
        } else {
            routingManager.updateDevices([device])
        }
    }

    // MARK: Activation

    public func activateDevice(_ device: MediaOutputDevice, session: MediaOutputSession, for deviceFeatures: MediaOutputDevice.Capabilities) {
        // AirPlay 2 where the receiver wants it (PTP-timed where a master can time it); else AirPlay 1 where it has RAOP.
        let choice = choices[device.displayName] ?? choices[device.id]
        var airPlay2Timing = Self.airPlay2Timing(of: device, choice: choice)
        let hasRAOP = device.requiredNetworkEndpoints.contains { Self.serviceType(of: $0) == Self.serviceType }
        if airPlay2Timing == .ptp, timing == nil {
            guard hasRAOP, choice == nil else {
                routingManager.failedToActivateDevice(device, session: session, error: MediaDeviceError(
                    .unsupported, "\(device.displayName) is timed by PTP, and this daemon has no PTP master to time it"))
                return
            }
            airPlay2Timing = nil
        }
        let wanted = airPlay2Timing != nil ? Self.airPlayServiceType : Self.serviceType
        guard let endpoint = device.requiredNetworkEndpoints.first(where: { Self.serviceType(of: $0) == wanted }) else {
            routingManager.failedToActivateDevice(device, session: session, error: MediaDeviceError(.connectionFailed, "no address"))
            return
        }
        if let reason = device.unavailableReason {
            routingManager.failedToActivateDevice(device, session: session, error: MediaDeviceError(.unsupported, "\(device.displayName): \(reason)"))
            return
        }
        active[session.id] = Active(device: device, session: session, airPlay2Timing: airPlay2Timing)
        if case .ip(let host, _, _) = endpoint.address, let pinned = hostPins[device.id]?.value, pinned != host {
            logger.warning("AirPlay receiver answers from another host than before", metadata: ["device": "\(device.displayName)", "host": "\(host)"])
            if offeredHosts.count >= 64, offeredHosts[device.id] == nil { offeredHosts.removeAll() }
            offeredHosts[device.id] = (host, device.displayName)
            active[session.id]?.movedTo = (endpoint, host)
            routingManager.requestPairingCode(
                for: device, session: session,
                reason: "\(device.displayName) now answers from \(host), not from \(pinned) as before; confirm only if it moved (another host can copy its name)",
                authorizationMethod: .confirmation(code: host))
            return
        }
        Task { await self.activate(session.id, endpoint: endpoint) }
    }

    /// The route is active: its receiver's host is pinned on first use.
    private func activated(_ current: Active) {
        if let host = Self.host(of: current.device), hostPins[current.device.id]?.value != host {
            hostPins.pin(host, for: current.device.id, name: current.device.displayName)
            offeredHosts[current.device.id] = nil
        }
        routingManager.activatedDevice(current.device, session: current.session)
    }

    private func activate(_ id: UUID, endpoint: Endpoint) async {
        if active[id]?.airPlay2 == true { return await activateAirPlay2(id, endpoint: endpoint) }
        do {
            let connection = try await connect(endpoint)
            guard active[id] != nil else {
                await connection.close()
                return
            }
            guard let stream = connection.byteStream else {
                await connection.close()
                throw TransportError(.unsupported, "the transport gives no byte stream")
            }
            let rtsp = makeRTSPClient(stream)
            await rtsp.start()
            active[id]?.connection = connection
            active[id]?.rtsp = rtsp
            watch(id, connection)
            guard let current = active[id] else { return }
            // An Apple TV that took our key before: prove it first (device verification).
            var verified = false
            if pairings.isVerified(current.device.id) {
                do {
                    try await verifyDevice(rtsp)
                    verified = true
                } catch let error as HAPError where error.kind != .cryptoUnavailable {
                    logger.notice("AirPlay receiver refused our kept device verification; asking for its PIN again", metadata: ["device": "\(current.device.displayName)", "error": "\(error)"])
                    pairings.forgetVerification(for: current.device.id)
                }
            }
            if !verified, Self.wantsDeviceVerification(endpoint.attributes) { return try await startDeviceVerification(id, endpoint: endpoint) }
            let options = try await rtsp.send(RTSPRequest(method: "OPTIONS", uri: "*"))
            if options.status == 403, !verified { return try await startDeviceVerification(id, endpoint: endpoint) }
            if options.status == 401 {
                guard let challenge = RTSPDigestChallenge(header: options[header: "WWW-Authenticate"] ?? "") else {
                    throw TransportError(.authenticationFailed, "the receiver asks for an authentication other than a password digest")
                }
                guard let current = active[id] else { return }
                if let key = Self.passwordKey(for: current.device), let password = passwords[key] {
                    await authenticate(id, challenge, password: password)
                } else {
                    active[id]?.challenge = challenge
                    routingManager.requestPairingCode(
                        for: current.device, session: current.session, reason: "\(current.device.displayName) asks for its AirPlay password",
                        authorizationMethod: .password)
                }
                return
            }
            guard options.status == 200 else {
                throw TransportError(options.status == 403 ? .authenticationFailed : .connectionRefused, "OPTIONS: \(options.status) \(options.reason)")
            }
            try await authSetupIfWanted(rtsp, endpoint: endpoint, options: options)
            guard let current = active[id] else { return }
            activated(current)
        } catch let error as TransportError {
            fail(id, MediaDeviceError(error.code == .timedOut ? .timedOut : error.code == .authenticationFailed ? .authorizationFailed : .connectionFailed, error.message))
        } catch let error as HAPError {
            fail(id, MediaDeviceError(error.kind == .cryptoUnavailable ? .unsupported : .authorizationFailed, "AirPlay device verification: \(error)"))
        } catch {
            fail(id, MediaDeviceError(.connectionFailed, "\(error)"))
        }
    }

    // MARK: AirPlay 1 device verification (Apple TVs)

    /// Whether the receiver says it wants device verification before it takes a stream: `sf`
    /// (status flags) with bit 9, as Apple TVs since tvOS 10.2 announce it (OwnTone reads it so).
    /// A receiver that does not say so and answers `OPTIONS` with 403 gets it too.
    static func wantsDeviceVerification(_ attributes: [String: String]) -> Bool {
        guard let flags = attributes["sf"].flatMap({ $0.lowercased().hasPrefix("0x") ? UInt64($0.dropFirst(2), radix: 16) : UInt64($0) }) else { return false }
        return flags & (1 << 9) != 0
    }

    /// `POST /pair-pin-start` (the TV shows a PIN), then the person is asked for it.
    private func startDeviceVerification(_ id: UUID, endpoint: Endpoint) async throws {
        guard let current = active[id], let rtsp = current.rtsp else { return }
        let answer = try await rtsp.send(RTSPRequest(method: "POST", uri: "/pair-pin-start"))
        guard answer.status == 200 else {
            throw TransportError(.authenticationFailed, "\(current.device.displayName) wants device verification and refused to show a PIN: \(answer.status) \(answer.reason)")
        }
        active[id]?.awaitingVerificationPIN = endpoint
        routingManager.requestPairingCode(
            for: current.device, session: current.session, reason: "\(current.device.displayName) shows a PIN for AirPlay device verification",
            authorizationMethod: .numericCode(length: .fourCharacter))
    }

    /// `/pair-setup-pin` with the PIN: the TV keeps our key. Then, as OwnTone does, a new
    /// connection that proves the key (`/pair-verify`) before `OPTIONS`.
    private func verifyWithPIN(_ id: UUID, pin: String, endpoint: Endpoint) async {
        guard let current = active[id], let rtsp = current.rtsp else { return }
        do {
            let controller = try pairings.controller()
            var setup = DeviceVerificationSetup(
                pin: pin, username: DeviceVerificationSetup.username(for: controller.publicKey), secretKey: controller.secretKey, publicKey: controller.publicKey)
            var body = setup.start()
            // Three exchanges at most: a receiver cannot keep us in it.
            exchanges: for _ in 0..<3 {
                let answer = try await rtsp.send(RTSPRequest(
                    method: "POST", uri: "/pair-setup-pin", headers: [("Content-Type", DeviceVerificationSetup.contentType)], body: body))
                guard answer.status == 200 else { throw HAPError(.authenticationFailed, "pair-setup-pin: \(answer.status) \(answer.reason)") }
                switch try setup.receive(answer.body) {
                case .send(let next): body = next
                case .paired: break exchanges
                }
            }
            pairings.keepVerification(for: current.device.id)
            logger.info("AirPlay device verification: the receiver keeps our key", metadata: ["device": "\(current.device.displayName)"])
            active[id]?.watcher?.cancel()
            active[id]?.rtsp = nil
            active[id]?.connection = nil
            await rtsp.stop()
            await current.connection?.close()
            await activate(id, endpoint: endpoint)
        } catch let error as HAPError where error.kind == .authenticationFailed {
            fail(id, MediaDeviceError(.authorizationFailed, "\(current.device.displayName) refused the PIN"))
        } catch let error as HAPError {
            fail(id, MediaDeviceError(error.kind == .cryptoUnavailable ? .unsupported : .authorizationFailed, "AirPlay device verification: \(error)"))
        } catch let error as TransportError {
            fail(id, MediaDeviceError(error.code == .timedOut ? .timedOut : .connectionFailed, error.message))
        } catch {
            fail(id, MediaDeviceError(.connectionFailed, "\(error)"))
        }
    }

    /// `/pair-verify` with our kept key; throws `HAPError` (`.authenticationFailed`) when the TV refuses it.
    private func verifyDevice(_ rtsp: RTSPClient) async throws {
        let controller = try pairings.controller()
        var verification = try DeviceVerification(secretKey: controller.secretKey, publicKey: controller.publicKey)
        var body = verification.start()
        for _ in 0..<2 {
            let answer = try await rtsp.send(RTSPRequest(
                method: "POST", uri: "/pair-verify", headers: [("Content-Type", DeviceVerification.contentType)], body: body))
            guard answer.status == 200 else { throw HAPError(.authenticationFailed, "pair-verify: \(answer.status) \(answer.reason)") }
            switch try verification.receive(answer.body) {
            case .send(let next): body = next
            case .done: return
            }
        }
    }

    /// `POST /auth-setup` where the receiver says it takes it (`et` lists 4) and `OPTIONS` lists
    /// POST: AirPort Express 7.8 and Sonos refuse `ANNOUNCE` (403) without it. The body is a
    /// flag for "no encryption" and a fresh Curve25519 public key; the receiver answers with
    /// its own key and an MFi certificate, which no sender outside Apple can check — so this is
    /// no authentication of the receiver, only the step it wants (as OwnTone does it). A
    /// refusal is logged and the stream tried anyway.
    private func authSetupIfWanted(_ rtsp: RTSPClient, endpoint: Endpoint, options: RTSPResponse) async throws {
        guard endpoint.attributes["et"]?.split(separator: ",").contains(where: { $0.filter { $0 != " " } == "4" }) == true,
            options[header: "Public"]?.split(separator: ",").contains(where: { $0.filter { $0 != " " } == "POST" }) == true
        else { return }
        let secret = (0..<32).map { _ in UInt8.random(in: .min ... .max) }
        guard let publicKey = try? HAPCrypto.x25519(scalar: secret) else {
            logger.notice("AirPlay auth-setup skipped: no Curve25519 here", metadata: ["endpoint": "\(endpoint.id)"])
            return
        }
        let answer = try await rtsp.send(RTSPRequest(method: "POST", uri: "/auth-setup", headers: [("Content-Type", "application/octet-stream")], body: [0x01] + publicKey))
        if answer.status != 200 {
            logger.notice("AirPlay receiver refused auth-setup; trying the stream anyway", metadata: ["endpoint": "\(endpoint.id)", "status": "\(answer.status)"])
        }
    }

    // MARK: AirPlay 2 pairing

    /// Connects and pairs: pair-verify with the keys kept from a PIN pairing, else transient
    /// pair-setup, else (the receiver wants its PIN) the person is asked for the PIN.
    private func activateAirPlay2(_ id: UUID, endpoint: Endpoint) async {
        do {
            let connection = try await connect(endpoint)
            guard active[id] != nil else {
                await connection.close()
                return
            }
            guard let inner = connection.byteStream else {
                await connection.close()
                throw TransportError(.unsupported, "the transport gives no byte stream")
            }
            let stream = HAPByteStream(inner)
            let rtsp = makeRTSPClient(stream)
            await rtsp.start()
            active[id]?.connection = connection
            active[id]?.rtsp = rtsp
            active[id]?.hapStream = stream
            watch(id, connection)
            guard let current = active[id] else { return }
            if let kept = pairings.pairing(for: current.device.id) {
                do {
                    try await verify(id, rtsp, stream, kept.controller, kept.receiver)
                    return activated(current)
                } catch let error as HAPError where error.kind != .cryptoUnavailable {
                    // It forgot us (reset, or another controller took our place): pair again.
                    logger.notice("AirPlay 2 receiver refused our kept keys; pairing again", metadata: ["device": "\(current.device.displayName)", "error": "\(error)"])
                    pairings.forget(current.device.id)
                }
            }
            if AirPlayFeatures(attributes: endpoint.attributes)?.requiresPIN == true {
                return askForPIN(id)
            }
            do {
                let result = try await pairSetup(rtsp, PairSetup(mode: .transient))
                stream.encrypt(with: try HAPChannel.control(sharedSecret: result.sessionKey))
                active[id]?.pairingSecret = result.sessionKey
                activated(current)
            } catch let error as HAPError where error.kind == .refused(2) {
                // Transient pairing refused with "authentication": it wants its PIN.
                askForPIN(id)
            }
        } catch {
            failAirPlay2(id, error)
        }
    }

    private func askForPIN(_ id: UUID) {
        guard let current = active[id] else { return }
        active[id]?.awaitingPIN = true
        routingManager.requestPairingCode(
            for: current.device, session: current.session, reason: "\(current.device.displayName) shows a PIN for AirPlay pairing",
            authorizationMethod: .numericCode(length: .fourCharacter))
    }

    /// PIN pair-setup on the connection, then pair-verify with the new keys (which are kept).
    private func pairWithPIN(_ id: UUID, pin: String) async {
        guard let current = active[id], let rtsp = current.rtsp, let stream = current.hapStream else { return }
        do {
            let controller = try pairings.controller()
            let result = try await pairSetup(rtsp, PairSetup(mode: .pin(pin), controller: controller))
            guard let receiver = result.receiver else { throw HAPError(.malformed, "PIN pairing ended without the receiver's identity") }
            try await verify(id, rtsp, stream, controller, receiver)
            pairings.keep(receiver, for: current.device.id)
            activated(current)
        } catch let error as HAPError where error.kind == .refused(2) || error.kind == .authenticationFailed {
            fail(id, MediaDeviceError(.authorizationFailed, "\(current.device.displayName) refused the PIN"))
        } catch {
            failAirPlay2(id, error)
        }
    }

    private func failAirPlay2(_ id: UUID, _ error: any Error) {
        switch error {
        case let error as TransportError:
            fail(id, MediaDeviceError(error.code == .timedOut ? .timedOut : error.code == .authenticationFailed ? .authorizationFailed : .connectionFailed, error.message))
        case let error as HAPError:
            fail(id, MediaDeviceError(error.kind == .cryptoUnavailable ? .unsupported : .authorizationFailed, "AirPlay 2 pairing: \(error)"))
        default:
            fail(id, MediaDeviceError(.connectionFailed, "\(error)"))
        }
    }

    private func pairSetup(_ rtsp: RTSPClient, _ setup: PairSetup) async throws -> PairSetupResult {
        var setup = setup
        var body = setup.start()
        // M1…M6 at most: a receiver cannot keep us in the exchange.
        for _ in 0..<3 {
            let answer = try await rtsp.send(RTSPRequest(
                method: "POST", uri: "/pair-setup", headers: [("Content-Type", "application/octet-stream"), ("X-Apple-HKP", setup.mode == .transient ? "4" : "3")], body: body))
            guard answer.status == 200 else { throw TransportError(.connectionRefused, "pair-setup: \(answer.status) \(answer.reason)") }
            switch try setup.receive(answer.body) {
            case .send(let next): body = next
            case .paired(let result): return result
            }
        }
        throw HAPError(.malformed, "pair-setup did not end")
    }

    private func verify(_ id: UUID, _ rtsp: RTSPClient, _ stream: HAPByteStream, _ controller: ControllerIdentity, _ receiver: ReceiverIdentity) async throws {
        var verify = try PairVerify(controller: controller, receiver: receiver)
        var body = verify.start()
        for _ in 0..<2 {
            let answer = try await rtsp.send(RTSPRequest(
                method: "POST", uri: "/pair-verify", headers: [("Content-Type", "application/octet-stream"), ("X-Apple-HKP", "3")], body: body))
            guard answer.status == 200 else { throw TransportError(.connectionRefused, "pair-verify: \(answer.status) \(answer.reason)") }
            switch try verify.receive(answer.body) {
            case .send(let next): body = next
            case .verified(let sharedSecret):
                stream.encrypt(with: try HAPChannel.control(sharedSecret: sharedSecret))
                active[id]?.pairingSecret = sharedSecret
                return
            }
        }
        throw HAPError(.malformed, "pair-verify did not end")
    }

    private func makeRTSPClient(_ stream: any ByteStream) -> RTSPClient {
        let instance = String(UInt64.random(in: 1 ... .max), radix: 16, uppercase: true)
        return RTSPClient(stream: stream, clock: clock, commonHeaders: [
            ("User-Agent", "MediaRoute/1.0"), ("Client-Instance", instance), ("DACP-ID", instance),
            ("Active-Remote", String(UInt32.random(in: 1 ... .max))),
        ])
    }

    /// A receiver that has just announced itself may not listen yet: a refused connection is
    /// tried twice more, 300 ms apart.
    private func connect(_ endpoint: Endpoint) async throws(TransportError) -> any Connection {
        var attempt = 0
        while true {
            do {
                return try await transport.connect(to: endpoint)
            } catch where error.code == .connectionRefused && attempt < 2 {
                attempt += 1
                try? await clock.sleep(for: .milliseconds(300))
            }
        }
    }

    private func watch(_ id: UUID, _ connection: any Connection) {
        active[id]?.watcher = Task {
            do {
                for try await _ in connection.lifetime {}
            } catch {
                self.connectionEnded(id, error)
            }
        }
    }

    private func connectionEnded(_ id: UUID, _ error: any Error) {
        guard let entry = active.removeValue(forKey: id) else { return }
        Task { await entry.stream?.stop() }
        routingManager.failedToActivateDevice(entry.device, session: entry.session, error: MediaDeviceError(.connectionFailed, "\(error)"))
    }

    private func fail(_ id: UUID, _ error: MediaDeviceError) {
        guard let entry = active.removeValue(forKey: id) else { return }
        entry.watcher?.cancel()
        routingManager.failedToActivateDevice(entry.device, session: entry.session, error: error)
        Task {
            await entry.rtsp?.stop()
            await entry.connection?.close()
        }
    }

    public func connectUsingPairingCode(_ pairingCode: String?, to device: MediaOutputDevice, session: MediaOutputSession) {
        if let endpoint = active[session.id]?.awaitingVerificationPIN {
            active[session.id]?.awaitingVerificationPIN = nil
            guard let pairingCode else {
                fail(session.id, MediaDeviceError(.cancelled, "no PIN was given for \(device.displayName)"))
                return
            }
            Task { await self.verifyWithPIN(session.id, pin: pairingCode, endpoint: endpoint) }
            return
        }
        if active[session.id]?.awaitingPIN == true {
            active[session.id]?.awaitingPIN = false
            guard let pairingCode else {
                fail(session.id, MediaDeviceError(.cancelled, "no PIN was given for \(device.displayName)"))
                return
            }
            Task { await self.pairWithPIN(session.id, pin: pairingCode) }
            return
        }
        if let moved = active[session.id]?.movedTo {
            active[session.id]?.movedTo = nil
            guard pairingCode != nil else {
                fail(session.id, MediaDeviceError(
                    .authorizationFailed, "\(device.displayName)'s new host \(moved.host) was not confirmed; it is refused until it is"))
                return
            }
            // Confirmed: the receiver moved; it is pinned there once it answers.
            hostPins.forget(device.id)
            offeredHosts[device.id] = nil
            Task { await self.activate(session.id, endpoint: moved.endpoint) }
            return
        }
        guard let challenge = active[session.id]?.challenge else { return }
        active[session.id]?.challenge = nil
        guard let pairingCode else {
            fail(session.id, MediaDeviceError(.cancelled, "no password was given for \(device.displayName)"))
            return
        }
        Task { await self.authenticate(session.id, challenge, password: pairingCode) }
    }

    /// Asks OPTIONS again with the password's digest: accepted, the route is active and the
    /// password is kept for the next activation; refused, activation fails.
    private func authenticate(_ id: UUID, _ challenge: RTSPDigestChallenge, password: String) async {
        guard let rtsp = active[id]?.rtsp else { return }
        await rtsp.authenticate(challenge, password: password)
        do {
            let options = try await rtsp.send(RTSPRequest(method: "OPTIONS", uri: "*"))
            guard let current = active[id] else { return }
            let key = Self.passwordKey(for: current.device)
            guard options.status == 200 else {
                if let key { passwords[key] = nil }
                fail(id, MediaDeviceError(
                    .authorizationFailed,
                    options.status == 401 || options.status == 403
                        ? "\(current.device.displayName) refused the password" : "OPTIONS: \(options.status) \(options.reason)"))
                return
            }
            if let key { passwords[key] = password }
            activated(current)
        } catch let error as TransportError {
            fail(id, MediaDeviceError(error.code == .timedOut ? .timedOut : .connectionFailed, error.message))
        } catch {
            fail(id, MediaDeviceError(.connectionFailed, "\(error)"))
        }
    }

    public func deactivateDevice(_ device: MediaOutputDevice, session: MediaOutputSession) {
        guard let entry = active.removeValue(forKey: session.id) else { return }
        entry.watcher?.cancel()
        entry.feed?.finish()
        Task {
            // Ended now: what the receiver holds is dropped (TEARDOWN), as the route ends.
            await (entry.stream ?? entry.draining)?.stop()
            await entry.events?.close()
            await entry.rtsp?.stop()
            await entry.connection?.close()
        }
    }

    // MARK: Real-time samples

    /// 16-bit stereo (or mono, doubled) at 44.1 kHz, played two seconds after it is sent.
    /// AirPlay 1: ALAC over RTP, timed against the sender's clock by NTP-style exchanges.
    public func routeDetails(session: MediaOutputSession) -> RouteStatus.Details {
        let airPlay2Timing = active[session.id]?.airPlay2Timing
        let buffered = airPlay2Timing == .ptp && active[session.id].map { (choices[$0.device.displayName] ?? choices[$0.device.id]) == .airPlay2Buffered } == true
        return RouteStatus.Details(
            protocolVersion: airPlay2Timing != nil ? (buffered ? "AirPlay 2 (buffered)" : "AirPlay 2") : "AirPlay 1 (RAOP)", timing: airPlay2Timing ?? .ntp,
            codec: buffered ? "AAC-LC" : "ALAC",
            declaredLatencyMicroseconds: UInt64(latencyFrames) * 1_000_000 / UInt64(RAOPStream.sampleRate))
    }

    public func realtimeAudioSupport(session: MediaOutputSession) -> RealtimeAudioSupport {
        RealtimeAudioSupport(
            encodings: [.pcmS16LE], sampleRates: [RAOPStream.sampleRate], channels: 1...2,
            latency: .milliseconds(Int64(latencyFrames) * 1000 / Int64(RAOPStream.sampleRate)))
    }

    public func startRealtimeSampleDelivery(session: MediaOutputSession) {
        guard let entry = active[session.id], !entry.streaming, let rtsp = entry.rtsp, let connection = entry.connection,
            let sockets = connection.datagrams, let localAddress = connection.byteStream?.localAddress,
            case .ip(let host, _, _)? = entry.device.requiredNetworkEndpoints.first?.address
        else { return }
        active[session.id]?.streaming = true
        let buffered = entry.airPlay2Timing == .ptp && (choices[entry.device.displayName] ?? choices[entry.device.id]) == .airPlay2Buffered
        let context: AirPlay2Context? = switch entry.airPlay2Timing {
        case .ptp: timing.map { AirPlay2Context(timing: .ptp($0), deviceID: senderID, groupUUID: groupUUID, name: "MediaRoute", buffered: buffered) }
        case nil: nil
        default: AirPlay2Context(timing: .ntp, deviceID: senderID, groupUUID: groupUUID, name: "MediaRoute")
        }
        let transport = self.transport
        let dataEndpoint = entry.device.requiredNetworkEndpoints.first { Self.serviceType(of: $0) == Self.airPlayServiceType }
        let stream = RAOPStream(
            rtsp: rtsp, sockets: sockets, sessionID: UInt32.random(in: 1 ... .max), localAddress: localAddress, receiverAddress: host,
            latencyFrames: latencyFrames, airPlay2: context,
            dataConnector: { port in
                // The buffered stream's TCP connection: the receiver's host, the port its SETUP named.
                guard var endpoint = dataEndpoint, case .ip(let host, _, let interface) = endpoint.address else {
                    throw TransportError(.unreachable, "no address for the buffered stream")
                }
                endpoint.address = .ip(host: host, port: port, interface: interface)
                return try await transport.connect(to: endpoint)
            }, clock: clock, logger: logger)
        Task {
            do {
                try await stream.start()
                try? await stream.setVolume(entry.volume)
                if let port = await stream.eventPort { await self.openEvents(session, port: port) }
                self.streamStarted(session, stream)
            } catch {
                await stream.stop()
                self.streamFailed(session, error)
            }
        }
    }

    /// Connects to the receiver's event channel (encrypted with the pairing's events keys) and
    /// answers each of its requests `200 OK`; what it says is logged. A receiver that refuses
    /// the connection still plays (shairport-sync accepts and says nothing; Apple's receivers
    /// send events there). The connection ends with the stream.
    private func openEvents(_ session: MediaOutputSession, port: UInt16) async {
        guard let entry = active[session.id], let secret = entry.pairingSecret,
            var endpoint = entry.device.requiredNetworkEndpoints.first(where: { Self.serviceType(of: $0) == Self.airPlayServiceType }),
            case .ip(let host, _, let interface) = endpoint.address
        else { return }
        endpoint.address = .ip(host: host, port: port, interface: interface)
        do {
            let connection = try await transport.connect(to: endpoint)
            guard let inner = connection.byteStream, active[session.id]?.streaming == true else {
                await connection.close()
                return
            }
            let channel = HAPByteStream(inner)
            channel.encrypt(with: try HAPChannel.events(sharedSecret: secret))
            await active[session.id]?.events?.close()
            active[session.id]?.events = connection
            let logger = self.logger, name = entry.device.displayName, clock = self.clock
            Task {
                var parser = RTSPRequestParser()
                var budget = EventChannelBudget()
                do {
                    for try await bytes in channel.incoming {
                        for request in try parser.consume(bytes) {
                            guard budget.allow(now: clock.now()) else {
                                logger.notice("AirPlay 2 event channel closed: the receiver sent more than its budget; playing on", metadata: [
                                    "device": "\(name)", "answered": "\(budget.answered)", "budget": "\(budget.burst) + \(budget.requestsPerSecond)/s"])
                                await connection.close()
                                return
                            }
                            // Logged, then answered: a receiver's events are at most what it says of itself.
                            logger.debug("AirPlay 2 event", metadata: ["device": "\(name)", "request": "\(request.method) \(request.uri)", "bytes": "\(request.body.count)"])
                            try await channel.write(RTSPRequestParser.okResponse(cseq: request.headers.first { $0.0 == "cseq" }?.1))
                        }
                    }
                } catch {
                    logger.debug("AirPlay 2 event channel ended", metadata: ["device": "\(name)", "error": "\(error)"])
                }
                await connection.close()
            }
        } catch {
            logger.notice("AirPlay 2 event channel not opened; playing without it", metadata: ["device": "\(entry.device.displayName)", "error": "\(error)"])
        }
    }

    private func streamStarted(_ session: MediaOutputSession, _ stream: RAOPStream) {
        guard active[session.id]?.streaming == true else {
            Task { await stream.stop() }
            return
        }
        active[session.id]?.stream = stream
        // Room for what waited while the stream was set up (up to twice the queue, a second) as well
        // as the queue itself: a slow setup (a loaded box, a slow receiver) must not drop the first
        // second at the handover. The consumer sends the backlog at once.
        let (feed, continuation) = AsyncStream.makeStream(of: StreamItem.self, bufferingPolicy: .bufferingOldest(Self.queuedBuffers * 3))
        if let nowPlaying = active[session.id]?.nowPlaying { continuation.yield(.nowPlaying(nowPlaying)) }
        let flushes = active[session.id]?.flushes ?? FlushCounter()
        for (pcm, time) in active[session.id]?.waiting ?? [] { continuation.yield(.pcm(pcm, presentationTime: time, flushes: flushes.count)) }
        active[session.id]?.waiting = []
        active[session.id]?.feed = continuation
        let endpoints = active[session.id]?.device.requiredNetworkEndpoints ?? []
        let airPlayRecord = endpoints.first { Self.serviceType(of: $0) == Self.airPlayServiceType }
        let types = active[session.id]?.airPlay2 == true
            ? airPlayRecord.flatMap { AirPlayFeatures(attributes: $0.attributes) }.map(RAOPMetadataTypes.init(features:)) ?? []
            : RAOPMetadataTypes(txt: endpoints.first { Self.serviceType(of: $0) == Self.serviceType }?.attributes["md"])
        let logger = self.logger
        Task {
            var flushed = flushes.count
            for await item in feed {
                let asked = flushes.count
                if asked != flushed {
                    flushed = asked
                    do { try await stream.flush() } catch { logger.warning("RAOP FLUSH failed", metadata: ["error": "\(error)"]) }
                }
                switch item {
                case .pcm(let pcm, let time, let written):
                    if written == flushed { await stream.push(pcm, presentationTime: time) }
                case .flush:
                    break
                case .nowPlaying(let nowPlaying):
                    do {
                        try await stream.setNowPlaying(nowPlaying, types: types)
                    } catch {
                        logger.warning("RAOP metadata not taken", metadata: ["error": "\(error)"])
                    }
                }
            }
        }
    }

    private func streamFailed(_ session: MediaOutputSession, _ error: any Error) {
        guard active[session.id]?.streaming == true else { return }
        active[session.id]?.streaming = false
        active[session.id]?.waiting = []
        let code: MediaDeviceError.Code = (error as? TransportError)?.code == .authenticationFailed ? .authorizationFailed : .sessionFailed
        routingManager.sessionFailed(session, error: MediaDeviceError(code, "AirPlay stream not started: \(error)"))
    }

    public func stopRealtimeSampleDelivery(session: MediaOutputSession) {
        guard let entry = active[session.id], entry.streaming else { return }
        active[session.id]?.streaming = false
        active[session.id]?.stream = nil
        active[session.id]?.waiting = []
        active[session.id]?.feed = nil
        // What is queued still goes out (the feed finishes after it), then what was sent plays.
        entry.feed?.finish()
        let events = entry.events
        active[session.id]?.events = nil
        if let stream = entry.stream {
            active[session.id]?.draining = stream
            Task {
                await stream.stop(draining: true)
                await events?.close()
            }
        } else if let events {
            Task { await events.close() }
        }
    }

    public func receiveSamples(_ buffer: SampleBuffer, session: MediaOutputSession) {
        guard let entry = active[session.id], entry.streaming else { return }
        let pcm = buffer.stereoS16LE
        if let feed = entry.feed {
            if case .dropped = feed.yield(.pcm(pcm, presentationTime: buffer.presentationTime, flushes: entry.flushes.count)) {
                dropped(session, "the stream is \(Self.queuedBuffers) buffers behind")
            }
        } else if entry.waiting.count < Self.queuedBuffers * 2 {
            active[session.id]?.waiting.append((pcm, buffer.presentationTime))
        } else {
            dropped(session, "the stream is still being set up")
        }
    }

    /// Samples the route could not take: counted, and logged once a second at most, so a
    /// stream that falls behind says so instead of playing with holes unnoticed.
    private func dropped(_ session: MediaOutputSession, _ why: String) {
        droppedBuffers += 1
        let now = clock.now()
        guard now - lastDropLog >= .seconds(1) else { return }
        lastDropLog = now
        logger.warning("AirPlay samples dropped", metadata: ["session": "\(session.id)", "why": "\(why)", "buffers": "\(droppedBuffers)"])
    }

    public func flushRealtimeSamples(session: MediaOutputSession) {
        guard let entry = active[session.id], entry.streaming else { return }
        if let feed = entry.feed {
            entry.flushes.increment()
            feed.yield(.flush)
        } else {
            active[session.id]?.waiting = []
        }
    }

    public func updateRealtimeNowPlaying(_ nowPlaying: RealtimeNowPlaying, session: MediaOutputSession) {
        guard active[session.id] != nil else { return }
        active[session.id]?.nowPlaying = nowPlaying
        active[session.id]?.feed?.yield(.nowPlaying(nowPlaying))
    }

    // MARK: Volume

    public func setVolume(_ volume: Float, for device: MediaOutputDevice) {
        guard let id = session(of: device) else { return }
        let level = volume.isFinite ? min(max(volume, 0), 1) : 0
        active[id]?.volume = level
        if let stream = active[id]?.stream { Task { try? await stream.setVolume(level) } }
        if let entry = active[id] { routingManager.volumeChanged(for: entry.device, volume: level, muted: level == 0) }
    }

    public func volume(for device: MediaOutputDevice) -> Float {
        session(of: device).flatMap { active[$0]?.volume } ?? 0
    }

    public func changeVolume(by increments: Int, for device: MediaOutputDevice) {
        setVolume(volume(for: device) + Float(increments) / 16, for: device)
    }

    public func muteDevice(_ device: MediaOutputDevice) {
        guard let id = session(of: device), let stream = active[id]?.stream else { return }
        Task { try? await stream.setVolume(0) }
    }

    public func unmuteDevice(_ device: MediaOutputDevice) {
        guard let id = session(of: device), let stream = active[id]?.stream, let level = active[id]?.volume else { return }
        Task { try? await stream.setVolume(level) }
    }

    public func isDeviceMuted(_ device: MediaOutputDevice) -> Bool { false }

    private func session(of device: MediaOutputDevice) -> UUID? {
        active.first { $0.value.device.id == device.id }?.key
    }

    // MARK: Sessions

    public func startSession(_ session: MediaOutputSession, identifier: String?, url: URL) {
        routingManager.sessionFailed(session, error: MediaDeviceError(.unsupported, "an AirPlay 1 receiver does not fetch URLs; stream audio to it"))
    }

    public func stopSession(_ session: MediaOutputSession) {}
    public func sendData(_ data: Data, toApplication applicationIdentifier: String, session: MediaOutputSession) {}
}

/// How many flushes a stream was asked for, shared by the extension (which counts them) and
/// its feed's consumer (which reads the count before each item).
final class FlushCounter: Sendable {
    private let value = Atomic<UInt64>(0)

    var count: UInt64 { value.load(ordering: .acquiring) }

    func increment() { value.add(1, ordering: .releasing) }
}

extension RAOPExtension: IdentityPinning {
    /// The host each receiver was first used at (with the one it answers from instead, when it
    /// moved), and the passwords receivers accepted this run (for their host only).
    public func pinnedIdentities() -> [PinnedIdentity] {
        var entries = hostPins.all.map { id, pin in
            PinnedIdentity(
                kind: .airPlayHost, deviceID: id, name: reported[id]?.displayName ?? offeredHosts[id]?.name ?? (pin.name.isEmpty ? id : pin.name),
                pinned: pin.value, offered: offeredHosts[id]?.host)
        }
        for key in passwords.keys {
            guard let at = key.lastIndex(of: "@") else { continue }
            let id = String(key[..<at])
            let name = reported[id]?.displayName ?? hostPins[id]?.name ?? id
            entries.append(PinnedIdentity(kind: .airPlayPassword, deviceID: id, name: name, pinned: String(key[key.index(after: at)...])))
        }
        for id in pairings.pairedDevices {
            guard let receiver = pairings.pairing(for: id)?.receiver else { continue }
            let name = reported[id]?.displayName ?? hostPins[id]?.name ?? id
            entries.append(PinnedIdentity(kind: .airPlayPairing, deviceID: id, name: name, pinned: receiver.identifier))
        }
        // Apple TVs that keep our key from device verification (nothing of theirs is kept).
        for id in pairings.verifiedDevices {
            let name = reported[id]?.displayName ?? hostPins[id]?.name ?? id
            entries.append(PinnedIdentity(kind: .airPlayPairing, deviceID: id, name: name, pinned: "device verification"))
        }
        return entries
    }

    public func forgetIdentity(of deviceID: String) -> Int {
        let keys = passwords.keys.filter { $0.hasPrefix(deviceID + "@") }
        for key in keys { passwords[key] = nil }
        offeredHosts[deviceID] = nil
        // An AirPlay 2 receiver forgotten here pairs again (with its PIN) the next time.
        return keys.count + (hostPins.forget(deviceID) ? 1 : 0) + (pairings.forget(deviceID) ? 1 : 0)
    }

    public func acceptIdentity(of deviceID: String) -> Bool {
        guard let offered = offeredHosts.removeValue(forKey: deviceID) else { return false }
        hostPins.pin(offered.host, for: deviceID, name: offered.name)
        logger.notice("AirPlay receiver's new host accepted", metadata: ["device": "\(offered.name)", "host": "\(offered.host)"])
        return true
    }
}
