#if canImport(Glibc)
import Glibc
#endif
import Logging
import MediaClock
import MediaDevice
import RoutingModel
import RAOP
import Transport
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What an AirPlay 2 stream adds to one of AirPlay 1: how it is timed and who the sender says
/// it is in its `SETUP`s.
struct AirPlay2Context: Sendable {
    enum Timing: Sendable {
        /// By the PTP master (the receiver follows it, or it follows the receiver's grandmaster).
        case ptp(any AirPlayTimingMaster)
        /// By NTP exchanges the receiver starts with our timing port, as AirPlay 1's.
        case ntp
    }

    var timing: Timing
    /// The sender's device id (a hardware-address-like `AA:BB:…`, stable for the daemon's run).
    var deviceID: String
    /// The group the stream plays in: the same for every receiver of one group.
    var groupUUID: String
    var name: String
    /// A buffered stream (type 103: AAC over TCP, timed by rate anchors) instead of a real-time one.
    var buffered = false
}

/// One stream to a receiver: ALAC frames of 352 samples in RTP packets at the pace samples
/// come (the daemon's delivery paces them by the clock), a sync packet each second on the
/// control port, and the receiver's resend requests served from the last
/// ``resendBufferPackets`` packets.
///
/// AirPlay 1 (RAOP): announced, set up and recorded over RTSP; the receiver's timing requests
/// answered with the box's clock. AirPlay 2 (with an ``AirPlay2Context``, on a paired,
/// encrypted RTSP connection): the session and the stream set up with binary property lists,
/// `RECORD` and (PTP) `SETPEERS`; every audio packet sealed with a stream key of its own; the
/// sync packets tie RTP times to the PTP master's clock, which serves the receiver while the
/// stream lasts (or to the receiver's own, where it insists on being grandmaster; on a slow link
/// less the path's delay, ``SlowLinkDelay``), or — timed
/// by NTP — to the box's clock as AirPlay 1's do; `/feedback` every two seconds so the receiver
/// keeps the session.
actor RAOPStream {
    /// Frames between a packet's sending and its playing by default: iTunes' two seconds
    /// (77 175 in the sync packets, which the receiver adds its fixed 11 025 to).
    static let defaultLatencyFrames: UInt32 = 88_200
    /// The least latency a stream asks for: the receiver's fixed part (a quarter second).
    static let minimumLatencyFrames: UInt32 = 11_025

    /// Frames between a packet's sending and its playing, as the sync packets tell the receiver.
    let latencyFrames: UInt32
    static let sampleRate = 44_100
    /// Two seconds of packets kept for resend requests.
    static let resendBufferPackets = 256

    private let rtsp: RTSPClient
    private let sockets: any DatagramSockets
    private let uri: String
    private let localAddress: String
    private let receiverAddress: String
    private let logger: Logger
    private var audio: (any DatagramSocket)?
    private var control: (any DatagramSocket)?
    private var timing: (any DatagramSocket)?
    private var ports: RAOPTransportPorts?
    private var tasks: [Task<Void, Never>] = []

    private var sequence = UInt16.random(in: .min ... .max)
    private let firstTimestamp = UInt32.random(in: .min ... .max)
    private var timestamp: UInt32
    private let ssrc = UInt32.random(in: .min ... .max)
    private var pending: [UInt8] = []
    private var sent: [UInt16: [UInt8]] = [:]
    /// What resend requests (spoofable, 8 bytes each) may make us send.
    private var resendBudget = ResendBudget()
    /// What resends are budgeted on, the sync packets are timed on and draining waits on.
    private let clock: any HostClock
    private let began: Duration
    private var sentOrder: [UInt16] = []
    /// The stream's timeline since the start or the last flush: the RTP time of a frame and the
    /// monotonic time delivery's clock reached it. Sync packets count the position from it, so
    /// streams fed by one delivery (a group) tell their receivers the same instant for the same
    /// frame, whenever each packet leaves.
    private var anchor: (time: Duration, timestamp: UInt32)?
    /// The sender's and the receiver's parts of the latency (the receiver's from `RECORD`'s answer).
    private var latency: RAOPLatency
    /// Whether a packet went out since the start or the last flush (the next one is marked first).
    private var started = false
    private var syncing = false
    private(set) var packetsSent = 0
    private var lastSent: Duration?
    /// The volume last said, said once more a second after audio starts: shairport-sync 3.3.8
    /// sets its initial volume (-18 dB) when its player thread starts after RECORD, and under load
    /// that came after the SET_PARAMETER sent right after RECORD and undid it (its log: "Set initial
    /// volume to -18" after our -15; the receiver played 8.7 dB quieter than asked, in one test run
    /// of eight). Saying it again once audio flows is harmless where the first one held.
    private var volumeSaid: Float?
    private var volumeRepeated = false
    private let encoder = ALACEncoder()
    /// AirPlay 2 only: the context, the stream key, and whether the master serves the receiver.
    private let airPlay2: AirPlay2Context?
    private let streamKey: [UInt8] = (0..<32).map { _ in UInt8.random(in: .min ... .max) }
    private var following = false
    /// AirPlay 2: the TCP port of the receiver's event channel, as its session's SETUP answered.
    private(set) var eventPort: UInt16?
    /// A buffered stream: its TCP connection, AAC encoder, next sequence number (23 bits) and
    /// whether the current run (since the start or the last flush) was anchored.
    private let dataConnector: (@Sendable (UInt16) async throws -> any Connection)?
    private var data: (any Connection)?
    private var aac: AirPlayAACEncoder?
    private var bufferedSequence = UInt32.random(in: 0...0x3F_FFFF)
    /// The clock the last sync packet named: when the receiver's timing changes clock (it
    /// announced itself grandmaster mid-stream, or fell silent), a sync packet goes at once.
    private var syncedClock: UInt64?
    /// Time between `/feedback` requests: shairport-sync drops a sender silent for about 30 s.
    static let feedbackInterval: Duration = .seconds(2)
    /// On a slow link (``SlowLinkDelay/isSlow``) `/feedback` goes four times as often: each
    /// one's round trip measures the link's jitter, which decides how late the receiver reads
    /// our clock. The first ``SlowLinkDelay/quickRoundTrips`` go 25 ms after the one before
    /// was answered (half a minute on a 25 ms link): from a few round trips the estimate is
    /// still off by ±0.2 ms (0.2–0.4 ms for the first half minute in the benchmark at 100 ms).
    static let slowLinkFeedbackInterval: Duration = .milliseconds(500)
    static let quickFeedbackInterval: Duration = .milliseconds(25)
    /// How often the slow link's delay is worked out again from the round trips.
    static let estimateInterval: Duration = .seconds(1)
    /// The least round trip the kernel measured on the RTSP connection (read when the stream
    /// starts and at each `/feedback`) and the round trips of the `/feedback` requests: how
    /// late the receiver reads our PTP clock on a slow link.
    private var slowLink = SlowLinkDelay()
    /// ``SlowLinkDelay/oneWay`` as of the last `/feedback` (worked out there, not per packet),
    /// and as last logged (a change of 0.1 ms or more is logged again).
    private var slowLinkDelay: Duration = .zero
    /// When ``slowLinkDelay`` was last worked out (nil: not yet).
    private var estimated: Duration?
    private var pathDelaySaid: Duration?

    /// What sync packets and rate anchors take off their times for a receiver that follows our
    /// PTP master without measuring its path (``SlowLinkDelay``); nothing for one that sends
    /// Delay_Req (it allows for its path itself) or whose own clock we follow (that exchange
    /// measures the path both ways).
    private func pathDelay(for reading: AirPlayClockReading, master: any AirPlayTimingMaster) -> Duration {
        guard reading.clockIdentity == master.clockIdentity, !master.measuresPathDelay(receiverAddress) else { return .zero }
        return slowLinkDelay
    }

    /// Reads the kernel's least round trip again and works out ``slowLinkDelay`` anew.
    private func readLeastRoundTrip() async {
        slowLink.leastRoundTrip = await rtsp.leastRoundTrip()
        // The estimate moves slowly (hundreds of round trips): once a second is enough, also
        // while `/feedback` goes every 25 ms (at every fourth it cost up to a percent of a core more).
        let now = clock.now()
        guard estimated.map({ now - $0 >= Self.estimateInterval }) ?? true || slowLink.roundTrips.count <= SlowLinkDelay.minimumSpreadSamples else { return }
        estimated = now
        slowLinkDelay = slowLink.oneWay(followingFor: now - began)
    }

    /// A `/feedback` answered, with the network's round trip for it (``RTSPClient/timedSend(_:timeout:)``),
    /// then the kernel's least round trip read again; the time to the next one.
    private func fedBack(roundTrip: Duration?) async -> Duration {
        if let roundTrip { slowLink.record(roundTrip: roundTrip) }
        await readLeastRoundTrip()
        let moved = pathDelaySaid.map { slowLinkDelay - $0 >= .microseconds(100) || $0 - slowLinkDelay >= .microseconds(100) } ?? true
        if slowLink.isSlow, moved {
            pathDelaySaid = slowLinkDelay
            logger.info("slow link: the receiver's times are taken earlier by its path delay", metadata: [
                "receiver": "\(receiverAddress)", "delay": "\(slowLinkDelay)", "leastRoundTrip": "\(slowLink.leastRoundTrip ?? .zero)", "leastOfRequests": "\(slowLink.leastOfRequests ?? .zero)",
                "roundTrips": "\(slowLink.roundTrips.count)",
            ])
        }
        return nextFeedbackInterval()
    }

    private func nextFeedbackInterval() -> Duration {
        guard slowLink.isSlow else { return Self.feedbackInterval }
        return slowLink.roundTrips.count < SlowLinkDelay.quickRoundTrips ? Self.quickFeedbackInterval : Self.slowLinkFeedbackInterval
    }

    init(
        rtsp: RTSPClient, sockets: any DatagramSockets, sessionID: UInt32, localAddress: String, receiverAddress: String,
        latencyFrames: UInt32 = RAOPStream.defaultLatencyFrames, airPlay2: AirPlay2Context? = nil,
        dataConnector: (@Sendable (UInt16) async throws -> any Connection)? = nil, clock: any HostClock = SystemHostClock(), logger: Logger
    ) {
        self.airPlay2 = airPlay2
        self.dataConnector = dataConnector
        self.clock = clock
        began = clock.now()
        self.latencyFrames = max(latencyFrames, Self.minimumLatencyFrames)
        self.rtsp = rtsp
        self.sockets = sockets
        self.localAddress = localAddress
        self.receiverAddress = receiverAddress
        self.uri = "rtsp://\(localAddress.contains(":") ? "[\(localAddress)]" : localAddress)/\(sessionID)"
        self.logger = logger
        timestamp = firstTimestamp
        self.sessionID = sessionID
        latency = RAOPLatency(total: self.latencyFrames, receiverHeader: nil)
    }

    private let sessionID: UInt32

    /// ANNOUNCE, SETUP and RECORD (AirPlay 2: SETUP, RECORD, SETPEERS, SETUP); the stream then takes samples.
    func start() async throws {
        if let airPlay2 { return try await startAirPlay2(airPlay2) }
        let audio = try await sockets.open()
        let control = try await sockets.open()
        let timing = try await sockets.open()
        self.audio = audio
        self.control = control
        self.timing = timing
        if let reason = encoder.fallbackReason {
            logger.notice("RAOP stream sends uncompressed ALAC frames", metadata: ["reason": "\(reason)"])
        }
        try await expectOK(rtsp.send(RTSPRequest(
            method: "ANNOUNCE", uri: uri, headers: [("Content-Type", "application/sdp")],
            body: raopAnnouncement(
                sessionID: sessionID, senderAddress: localAddress, receiverAddress: receiverAddress, alac: encoder.configuration))), "ANNOUNCE")
        let setup = try await rtsp.send(RTSPRequest(method: "SETUP", uri: uri, headers: [
            ("Transport", "RTP/AVP/UDP;unicast;interleaved=0-1;mode=record;control_port=\(control.localPort);timing_port=\(timing.localPort)"),
        ]))
        try expectOK(setup, "SETUP")
        guard let transport = setup[header: "Transport"], let ports = RAOPTransportPorts(transport: transport) else {
            throw TransportError(.malformedMessage, "SETUP's answer names no server and control ports")
        }
        self.ports = ports
        if let session = setup[header: "Session"] { await rtsp.setSession(String(session.prefix { $0 != ";" })) }
        // Timing requests are answered from now on: the receiver asks before it plays.
        answerTimingRequests(on: timing)
        tasks.append(Task { [weak self] in
            for await datagram in control.incoming {
                guard let request = ResendRequest(datagram.bytes), let self else { continue }
                await self.resend(request)
            }
        })
        let record = try await rtsp.send(RTSPRequest(method: "RECORD", uri: uri, headers: [
            ("Range", "npt=0-"), ("RTP-Info", "seq=\(sequence);rtptime=\(timestamp)"),
        ]))
        try expectOK(record, "RECORD")
        // Each receiver adds its own fixed part: the sync packets make up the rest, so receivers
        // with different parts play a frame at one instant.
        latency = RAOPLatency(total: latencyFrames, receiverHeader: record[header: "Audio-Latency"])
        if latency.lateFrames > 0 {
            logger.warning(
                "the receiver's own latency is longer than the stream's: it plays late",
                metadata: ["receiver": "\(receiverAddress)", "frames": "\(latency.lateFrames)"])
        }
        logger.info("RAOP stream recording", metadata: ["receiver": "\(receiverAddress)", "ports": "\(ports)"])
    }

    /// Answers the receiver's NTP timing requests with the box's clock (AirPlay 1, and AirPlay 2 timed by NTP).
    private func answerTimingRequests(on timing: any DatagramSocket) {
        tasks.append(Task { [weak self] in
            for await datagram in timing.incoming {
                guard let request = TimingRequest(datagram.bytes) else { continue }
                let received = Self.now()
                try? await timing.send(RAOPPacket.timingReply(to: request, received: received, transmitted: Self.now()), toPort: datagram.sourcePort)
                if self == nil { return }
            }
        })
    }

    private func startAirPlay2(_ context: AirPlay2Context) async throws {
        // The connection's handshake and pairing measured the link before the first packet.
        await readLeastRoundTrip()
        let audio = try await sockets.open()
        let control = try await sockets.open()
        self.audio = audio
        self.control = control
        let sessionTiming: AirPlay2Setup.Timing
        switch context.timing {
        case .ptp(let master):
            try await master.follow(receiverAddress)
            following = true
            sessionTiming = .ptp(AirPlay2Setup.TimingPeer(id: context.groupUUID, addresses: [localAddress], clockIdentity: master.clockIdentity))
        case .ntp:
            let timing = try await sockets.open()
            self.timing = timing
            answerTimingRequests(on: timing)
            sessionTiming = .ntp(port: UInt16(clamping: timing.localPort))
        }
        let plist = [("Content-Type", AirPlay2Setup.contentType)]
        let session = try await rtsp.send(RTSPRequest(method: "SETUP", uri: uri, headers: plist, body: AirPlay2Setup.encode(
            AirPlay2Setup.Session(name: context.name, deviceID: context.deviceID, sessionUUID: UUID().uuidString, groupUUID: context.groupUUID, timing: sessionTiming)
                .propertyList)))
        try expectOK(session, "SETUP")
        eventPort = try AirPlay2Setup.decode(AirPlay2Setup.SessionReply.self, from: session.body).eventPort.flatMap { $0 > 0 ? $0 : nil }
        try expectOK(await rtsp.send(RTSPRequest(method: "RECORD", uri: uri)), "RECORD")
        if case .ptp(let master) = context.timing {
            // nqptp follows the first peer named, which must be us: its client.
            try expectOK(
                await rtsp.send(RTSPRequest(
                    method: "SETPEERS", uri: uri, headers: [("Content-Type", "/peer-list-changed")],
                    body: AirPlay2Setup.encode(AirPlay2Setup.peers([localAddress, receiverAddress])))),
                "SETPEERS")
            // A receiver that announced itself grandmaster is followed before the first sync packet names its clock.
            await master.settle(receiverAddress, limit: .seconds(1))
        }
        if context.buffered {
            switch AirPlayAACEncoder.make() {
            case .success(let encoder): aac = encoder
            case .failure(let error): throw TransportError(.unsupported, "no AAC encoder for a buffered stream: \(error)")
            }
        }
        let stream = AirPlay2Setup.Stream(
            controlPort: UInt16(clamping: control.localPort), key: streamKey, connectionID: UInt64(sessionID), latencyFrames: latencyFrames,
            kind: context.buffered ? .bufferedAAC : .realtimeALAC)
        let setup = try await rtsp.send(RTSPRequest(method: "SETUP", uri: uri, headers: plist, body: AirPlay2Setup.encode(AirPlay2Setup.streams([stream]))))
        try expectOK(setup, "SETUP")
        let reply = try AirPlay2Setup.decode(AirPlay2Setup.StreamsReply.self, from: setup.body)
        if context.buffered {
            guard let port = reply.streams.first?.dataPort, port > 0, let dataConnector else {
                throw TransportError(.malformedMessage, "SETUP's answer names no data port for the buffered stream")
            }
            data = try await dataConnector(port)
            latency = RAOPLatency(total: latencyFrames, receiverHeader: "0")
            startFeedback()
            logger.info("AirPlay 2 buffered stream recording", metadata: ["receiver": "\(receiverAddress)", "dataPort": "\(port)"])
            return
        }
        guard let ports = reply.streams.first, let data = ports.dataPort, data > 0, let controlPort = ports.controlPort, controlPort > 0 else {
            throw TransportError(.malformedMessage, "SETUP's answer names no data and control ports")
        }
        self.ports = RAOPTransportPorts(server: Int(data), control: Int(controlPort), timing: 0)
        latency = RAOPLatency(total: latencyFrames, receiverHeader: String(AirPlay2Packet.receiverFixedFrames))
        tasks.append(Task { [weak self] in
            for await datagram in control.incoming {
                guard let request = ResendRequest(datagram.bytes), let self else { continue }
                await self.resend(request)
            }
        })
        startFeedback()
        logger.info("AirPlay 2 stream recording", metadata: ["receiver": "\(receiverAddress)", "ports": "\(self.ports.map { "\($0)" } ?? "")"])
    }

    /// `POST /feedback` every ``feedbackInterval`` while the stream lasts.
    private func startFeedback() {
        let rtsp = rtsp
        tasks.append(Task { [clock, weak self] in
            var interval = await self?.nextFeedbackInterval() ?? Self.feedbackInterval
            while !Task.isCancelled {
                guard (try? await clock.sleep(for: interval)) != nil else { return }
                let answer = try? await rtsp.timedSend(RTSPRequest(method: "POST", uri: "/feedback"), timeout: .seconds(2))
                guard let self else { return }
                interval = await self.fedBack(roundTrip: answer?.roundTrip ?? nil)
            }
        })
    }

    /// Sets the receiver's volume (0…1; 0 is silence).
    func setVolume(_ fraction: Float) async throws {
        volumeSaid = fraction
        try expectOK(
            await rtsp.send(RTSPRequest(method: "SET_PARAMETER", uri: uri, headers: [("Content-Type", "text/parameters")], body: raopVolumeParameter(fraction))),
            "SET_PARAMETER")
    }

    /// Interleaved stereo S16LE at 44.1 kHz whose first frame the delivery's clock reached at
    /// `presentationTime` (CLOCK_MONOTONIC): sent in packets of 352 frames as they fill.
    func push(_ pcm: [UInt8], presentationTime: Duration) async {
        if aac != nil { return await pushBuffered(pcm, presentationTime: presentationTime) }
        if anchor == nil {
            // What waits for a whole packet came just before this buffer.
            let waiting = Duration.nanoseconds(Int64(pending.count / 4) * 1_000_000_000 / Int64(Self.sampleRate))
            anchor = (presentationTime - waiting, timestamp)
        }
        pending += pcm
        let packetBytes = ALACUncompressed.framesPerPacket * 4
        while pending.count >= packetBytes {
            let frame = encoder.encode(pending[..<packetBytes])
            pending.removeFirst(packetBytes)
            await send(frame)
        }
    }

    /// A buffered stream: each run (from the start or a flush) is anchored once — its first
    /// input frame, a latency after delivery reached it, by the timing's clock — then AAC units
    /// go out on the TCP connection as the encoder gives them.
    private func pushBuffered(_ pcm: [UInt8], presentationTime: Duration) async {
        guard let aac, let data = data?.byteStream else { return }
        if anchor == nil {
            let waiting = Duration.nanoseconds(Int64(pending.count / 4) * 1_000_000_000 / Int64(Self.sampleRate))
            // Decoded frames run `priming` behind the timestamps: the run's first input frame is there.
            let first = timestamp &+ UInt32(aac.priming)
            anchor = (presentationTime - waiting, first)
            let playsAt = presentationTime - waiting + .nanoseconds(Int64(latencyFrames) * 1_000_000_000 / Int64(Self.sampleRate))
            let (clockIdentity, networkTime): (UInt64, Duration)
            if case .ptp(let master)? = airPlay2?.timing {
                let reading = master.reading(for: receiverAddress)
                (clockIdentity, networkTime) = (reading.clockIdentity, reading.time + (playsAt - SampleBuffer.clockNow()) - pathDelay(for: reading, master: master))
            } else {
                (clockIdentity, networkTime) = (0, playsAt)
            }
            syncedClock = clockIdentity
            do {
                try expectOK(await rtsp.send(RTSPRequest(
                    method: "SETRATEANCHORTIME", uri: uri, headers: [("Content-Type", AirPlay2Setup.contentType)],
                    body: AirPlay2Setup.encode(AirPlay2Setup.rateAnchor(playing: true, rtpTime: first, networkTime: networkTime, clockIdentity: clockIdentity)))),
                    "SETRATEANCHORTIME")
            } catch {
                logger.warning("AirPlay 2 rate anchor not taken", metadata: ["receiver": "\(receiverAddress)", "error": "\(error)"])
            }
        }
        pending += pcm
        let unitBytes = AirPlayAACEncoder.framesPerUnit * 4
        while pending.count >= unitBytes {
            let unit = aac.encode(pending[..<unitBytes])
            pending.removeFirst(unitBytes)
            guard let unit else { continue }
            do {
                try await data.write(try AirPlay2Packet.bufferedAudio(sequence: bufferedSequence, timestamp: timestamp, payload: unit, key: streamKey))
            } catch {
                logger.warning("AirPlay 2 buffered packet not sent", metadata: ["receiver": "\(receiverAddress)", "error": "\(error)"])
            }
            bufferedSequence = (bufferedSequence &+ 1) & 0x7F_FFFF
            timestamp &+= UInt32(AirPlayAACEncoder.framesPerUnit)
            packetsSent += 1
            lastSent = clock.now()
        }
    }

    private func send(_ frame: [UInt8]) async {
        guard let audio, let ports else { return }
        let first = !started
        if first {
            started = true
            await sendSync(first: true)
            if !syncing {
                syncing = true
                tasks.append(Task { [weak self, clock] in
                    while !Task.isCancelled {
                        try? await clock.sleep(for: .seconds(1))
                        await self?.sendSync(first: false)
                        await self?.repeatVolumeOnce()
                    }
                })
            }
        }
        if !first, case .ptp(let master)? = airPlay2?.timing, master.reading(for: receiverAddress).clockIdentity != syncedClock {
            await sendSync(first: false)
        }
        let packet: [UInt8]
        if airPlay2 != nil {
            guard let sealed = try? AirPlay2Packet.audio(sequence: sequence, timestamp: timestamp, ssrc: ssrc, first: first, payload: frame, key: streamKey)
            else {
                logger.error("AirPlay 2 packet not sealed: libgcrypt refused")
                return
            }
            packet = sealed
        } else {
            packet = RAOPPacket.audio(sequence: sequence, timestamp: timestamp, ssrc: ssrc, first: first, payload: frame)
        }
        try? await audio.send(packet, toPort: ports.server)
        sent[sequence] = packet
        sentOrder.append(sequence)
        if sentOrder.count > Self.resendBufferPackets { sent[sentOrder.removeFirst()] = nil }
        sequence &+= 1
        timestamp &+= UInt32(ALACUncompressed.framesPerPacket)
        packetsSent += 1
        lastSent = clock.now()
    }

    private func repeatVolumeOnce() async {
        guard !volumeRepeated, let volumeSaid else { return }
        volumeRepeated = true
        try? await setVolume(volumeSaid)
    }

    /// The frame playing now is the stream's position by the clock less the latency.
    private func sendSync(first: Bool) async {
        guard let control, let ports, started, let anchor else { return }
        // The clocks are read together, and the time is that of the whole frame the position
        // names (not up to a frame, 22.7 µs, after it): each receiver of a group gets a pair
        // that is exact, wherever in a frame its packet was made.
        let ptp = airPlay2.flatMap { context -> (reading: AirPlayClockReading, master: any AirPlayTimingMaster)? in
            if case .ptp(let master) = context.timing { return (master.reading(for: receiverAddress), master) }
            return nil
        }
        let reading = ptp?.reading
        let now = SampleBuffer.clockNow()
        let ntpNow = reading == nil ? Self.now() : nil
        let elapsed = now - anchor.time
        let totalFrames = elapsed.components.seconds &* Int64(Self.sampleRate)
            &+ elapsed.components.attoseconds / (1_000_000_000_000_000_000 / Int64(Self.sampleRate))
        let remainder = elapsed - .nanoseconds(totalFrames.multipliedReportingOverflow(by: 1_000_000_000).partialValue / Int64(Self.sampleRate))
        let position = anchor.timestamp &+ UInt32(truncatingIfNeeded: totalFrames)
        if let reading {
            syncedClock = reading.clockIdentity
            let packet = AirPlay2Packet.sync(
                playingTimestamp: latency.playingTimestamp(position: position), masterTime: reading.time - remainder - (ptp.map { pathDelay(for: $0.reading, master: $0.master) } ?? .zero), nextTimestamp: position,
                clockIdentity: reading.clockIdentity, first: first)
            try? await control.send(packet, toPort: ports.control)
            return
        }
        let packet = RAOPPacket.sync(
            playingTimestamp: latency.playingTimestamp(position: position), now: ntpNow.map { Self.earlier($0, by: remainder) } ?? Self.now(),
            nextTimestamp: position, first: first)
        try? await control.send(packet, toPort: ports.control)
    }

    /// `time` less `duration` (under a second), as NTP time.
    static func earlier(_ time: NTPTimestamp, by duration: Duration) -> NTPTimestamp {
        let nanoseconds = UInt64(time.seconds) &* 1_000_000_000 &+ (UInt64(time.fraction) &* 1_000_000_000) >> 32
        let less = UInt64(clamping: max(0, duration.components.attoseconds / 1_000_000_000))
        return NTPTimestamp(nanoseconds: nanoseconds &- min(less, nanoseconds))
    }

    /// Drops what the receiver holds (`FLUSH` up to the next packet's RTP time) and what waits
    /// here for a whole packet; the next packet starts the stream's timing again, as the first did.
    func flush() async throws {
        pending = []
        started = false
        anchor = nil
        if aac != nil {
            // What the receiver buffered is dropped; a fresh encoder starts the next run (its priming again).
            if case .success(let encoder) = AirPlayAACEncoder.make() { aac = encoder }
            try expectOK(
                await rtsp.send(RTSPRequest(
                    method: "FLUSHBUFFERED", uri: uri, headers: [("Content-Type", AirPlay2Setup.contentType)],
                    body: AirPlay2Setup.encode(AirPlay2Setup.flushBuffered(untilSequence: bufferedSequence, timestamp: timestamp)))),
                "FLUSHBUFFERED")
            return
        }
        try expectOK(
            await rtsp.send(RTSPRequest(method: "FLUSH", uri: uri, headers: [("RTP-Info", "seq=\(sequence);rtptime=\(timestamp)")])), "FLUSH")
    }

    /// Tells the receiver what plays, in the kinds it shows: DAAP text, artwork, progress.
    func setNowPlaying(_ nowPlaying: RealtimeNowPlaying, types: RAOPMetadataTypes) async throws {
        let rtpInfo = ("RTP-Info", "rtptime=\(timestamp)")
        let metadata = nowPlaying.metadata
        if types.contains(.text), metadata.title != nil || metadata.artist != nil || metadata.album != nil {
            try expectOK(await rtsp.send(RTSPRequest(
                method: "SET_PARAMETER", uri: uri, headers: [("Content-Type", "application/x-dmap-tagged"), rtpInfo],
                body: DAAPMetadata.listingItem(title: metadata.title, artist: metadata.artist, album: metadata.album))), "SET_PARAMETER")
        }
        if types.contains(.artwork), let artwork = nowPlaying.artwork {
            try expectOK(await rtsp.send(RTSPRequest(
                method: "SET_PARAMETER", uri: uri, headers: [("Content-Type", artwork.mimeType), rtpInfo], body: artwork.bytes)), "SET_PARAMETER")
        }
        if types.contains(.progress), let duration = metadata.duration, duration.isFinite, duration >= 0 {
            // The app's position is that of what it writes now, the next packet's; what plays now is a latency behind.
            let rate = Double(Self.sampleRate)
            let start = timestamp &- UInt32(truncatingIfNeeded: Int64(min(nowPlaying.position ?? 0, 1e6) * rate))
            let current = started ? timestamp &- latencyFrames : timestamp
            let end = start &+ UInt32(truncatingIfNeeded: Int64(min(duration, 1e6) * rate))
            try expectOK(await rtsp.send(RTSPRequest(
                method: "SET_PARAMETER", uri: uri, headers: [("Content-Type", "text/parameters")],
                body: raopProgressParameter(start: start, current: current, end: end))), "SET_PARAMETER")
        }
    }

    private func resend(_ request: ResendRequest) async {
        guard let control, let ports else { return }
        let sent = self.sent
        for sequence in resendBudget.allow(request, now: clock.now() - began, isKept: { sent[$0] != nil }) {
            if let packet = sent[sequence] { try? await control.send(RAOPPacket.resent(packet), toPort: ports.control) }
        }
    }

    /// Packets sent again for resend requests, and those refused over the budget.
    var resends: (resent: Int, refused: Int) { (resendBudget.resent, resendBudget.refused) }

    /// Ends the stream: TEARDOWN (its answer is not waited for long) and the sockets closed.
    /// Draining waits first until what was sent has played (the latency after the last
    /// packet): the receiver drops what it holds at TEARDOWN.
    func stop(draining: Bool = false) async {
        if draining, let lastSent {
            let playedOut = lastSent + .milliseconds(Int64(latencyFrames) * 1000 / Int64(Self.sampleRate)) + .milliseconds(100)
            if playedOut > clock.now() { try? await clock.sleep(until: playedOut) }
        }
        for task in tasks { task.cancel() }
        tasks = []
        _ = try? await rtsp.send(RTSPRequest(method: "TEARDOWN", uri: uri), timeout: .seconds(2))
        if following, case .ptp(let master)? = airPlay2?.timing {
            following = false
            await master.stopFollowing(receiverAddress)
        }
        for socket in [audio, control, timing].compactMap({ $0 }) { await socket.close() }
        await data?.close()
        data = nil
        audio = nil
        control = nil
        timing = nil
    }

    private func expectOK(_ response: RTSPResponse, _ method: String) throws {
        guard response.status == 200 else {
            throw TransportError(
                response.status == 401 || response.status == 403 ? .authenticationFailed : .connectionRefused,
                "\(method): \(response.status) \(response.reason)")
        }
    }

    /// The sender's clock as NTP time (monotonic: only differences matter to the receiver).
    static func now() -> NTPTimestamp {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        // An epoch a little after 1900 keeps the seconds positive and far from wrapping.
        return NTPTimestamp(nanoseconds: (UInt64(time.tv_sec) + 0x8000_0000) &* 1_000_000_000 &+ UInt64(time.tv_nsec))
    }
}

extension RTSPClient {
    func setSession(_ value: String) { session = value }
}
