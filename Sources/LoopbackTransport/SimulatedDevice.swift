import Logging
import MediaClock
import Transport

/// The firmware of one simulated device: answers ``LoopbackRequest``s the way
/// a real TV or speaker would, on the host clock.
actor SimulatedDevice {
    private struct Peer {
        let connection: LoopbackConnection
        var paired: Bool
        var timers: [Task<Void, Never>]
    }

    private struct Playback {
        var url: String?
        var application: String?
        var state: LoopbackPlaybackStatus.State = .stopped
        var anchorPosition: Double = 0
        var anchorTime: Duration = .zero
        var rate: Double = 1
    }

    let spec: LoopbackDeviceSpec
    private let clock: any HostClock
    private let logger: Logger
    private var peers: [UInt64: Peer] = [:]
    private var volume: Float
    private var muted = false
    private var playback = Playback()
    private var audioFrames = 0
    var replyDelay: Double

    init(spec: LoopbackDeviceSpec, clock: any HostClock, logger: Logger) {
        self.spec = spec
        self.clock = clock
        self.logger = logger
        self.volume = spec.volume
        self.replyDelay = spec.replyDelay
    }

    var connectionCount: Int { peers.count }
    var audioFrameCount: Int { audioFrames }
    /// The first bytes of audio received (at most ``audioBytesKept``), to check what arrived.
    private(set) var audioBytes: [UInt8] = []
    static let audioBytesKept = 8 << 20

    func attach(_ connection: LoopbackConnection) {
        var timers: [Task<Void, Never>] = []
        let opened = clock.now()
        if let after = spec.dropConnectionAfter {
            timers.append(Task { [clock] in
                guard (try? await clock.sleep(until: opened + .seconds(double: after))) != nil else { return }
                self.drop(connectionID: connection.id, reason: "device dropped the connection")
            })
        }
        for change in spec.deviceVolumeChanges {
            timers.append(Task { [clock] in
                guard (try? await clock.sleep(until: opened + .seconds(double: change.after))) != nil else { return }
                self.changeVolumeOnDevice(to: change.volume)
            })
        }
        peers[connection.id] = Peer(connection: connection, paired: spec.pin == nil, timers: timers)
    }

    func detach(_ id: UInt64) {
        peers.removeValue(forKey: id)?.timers.forEach { $0.cancel() }
    }

    /// The device failing every connection (it vanished, or a fault was injected).
    func dropAll(reason: String) {
        for id in Array(peers.keys) { drop(connectionID: id, reason: reason) }
    }

    func drop(connectionID: UInt64, reason: String) {
        guard let peer = peers.removeValue(forKey: connectionID) else { return }
        peer.timers.forEach { $0.cancel() }
        peer.connection.fail(TransportError(.connectionLost, "\(spec.name): \(reason)"))
    }

    /// Someone pressed the volume buttons on the device.
    func changeVolumeOnDevice(to level: Float) {
        volume = min(max(level, 0), 1)
        broadcast(.volume(level: volume, muted: muted))
    }

    // MARK: Requests

    func handle(_ bytes: [UInt8], from connection: LoopbackConnection) {
        guard var peer = peers[connection.id] else { return }
        guard let envelope = LoopbackEnvelope<LoopbackRequest>.decode(bytes) else {
            reply(to: connection, id: nil, .failure(code: "malformed", message: "not a loopback request"))
            return
        }
        let id = envelope.id
        switch envelope.body {
        case .hello:
            reply(to: connection, id: id, .welcome(
                kind: spec.kind, requiresPairing: !peer.paired, volume: volume, muted: muted))
            return
        case .pair(let pin):
            if spec.pin == nil || pin == spec.pin {
                peer.paired = true
                peers[connection.id] = peer
                reply(to: connection, id: id, .ok)
            } else {
                reply(to: connection, id: id, .failure(code: "wrongPIN", message: "the PIN does not match"))
            }
            return
        default:
            guard peer.paired else {
                reply(to: connection, id: id, .failure(code: "unauthorized", message: "pair first"))
                return
            }
        }
        reply(to: connection, id: id, perform(envelope.body, for: connection))
    }

    private func perform(_ request: LoopbackRequest, for connection: LoopbackConnection) -> LoopbackReply {
        switch request {
        case .hello, .pair:
            return .ok
        case .load(let url, let application):
            guard spec.kind == .tv else { return unsupported("URL playback") }
            playback = Playback(url: url, application: application, state: .paused, anchorTime: clock.now())
            return announcePlayback()
        case .play:
            guard playback.url != nil else { return .failure(code: "noMedia", message: "nothing loaded") }
            reanchor()
            playback.state = .playing
            return announcePlayback()
        case .pause:
            guard playback.url != nil else { return .failure(code: "noMedia", message: "nothing loaded") }
            reanchor()
            playback.state = .paused
            return announcePlayback()
        case .seek(let position):
            guard playback.url != nil else { return .failure(code: "noMedia", message: "nothing loaded") }
            playback.anchorPosition = min(max(position, 0), spec.mediaDuration)
            playback.anchorTime = clock.now()
            return announcePlayback()
        case .setRate(let rate):
            guard playback.url != nil else { return .failure(code: "noMedia", message: "nothing loaded") }
            guard rate.isFinite, rate >= 0, rate <= 4 else {
                return .failure(code: "unsupported", message: "rate \(rate) out of range")
            }
            reanchor()
            if rate == 0 { playback.state = .paused } else { playback.rate = rate }
            return announcePlayback()
        case .stop:
            playback = Playback(anchorTime: clock.now())
            return announcePlayback()
        case .setVolume(let level):
            guard spec.kind == .tv else { return unsupported("absolute volume") }
            guard level.isFinite else { return .failure(code: "malformed", message: "volume is not a number") }
            volume = min(max(level, 0), 1)
            broadcast(.volume(level: volume, muted: muted), except: connection.id)
            return .volume(level: volume, muted: muted)
        case .changeVolume(let steps):
            let stepSize = 1 / Float(max(spec.volumeSteps, 1))
            volume = min(max(volume + Float(steps) * stepSize, 0), 1)
            broadcast(.volume(level: volume, muted: muted), except: connection.id)
            return .volume(level: volume, muted: muted)
        case .setMute(let mute):
            guard spec.kind == .tv else { return unsupported("mute") }
            muted = mute
            broadcast(.volume(level: volume, muted: muted), except: connection.id)
            return .volume(level: volume, muted: muted)
        case .appData(let application, let payload):
            // The device's application answers every message with "ack:" and the message.
            guard spec.kind == .tv else { return unsupported("applications") }
            deliver(.appData(application: application, payload: Array("ack:".utf8) + payload), to: connection)
            return .ok
        case .audio(let frames, let payload):
            guard spec.kind == .speaker else { return unsupported("real-time audio") }
            audioFrames += max(frames, 0)
            audioBytes.append(contentsOf: payload.bytes.prefix(max(0, Self.audioBytesKept - audioBytes.count)))
            return .audioReceived(totalFrames: audioFrames)
        case .status:
            return .playback(status())
        }
    }

    private func unsupported(_ what: String) -> LoopbackReply {
        .failure(code: "unsupported", message: "\(spec.displayName) does not support \(what)")
    }

    private func position(at time: Duration) -> Double {
        guard playback.state == .playing else { return playback.anchorPosition }
        let elapsed = (time - playback.anchorTime).seconds * playback.rate
        return min(playback.anchorPosition + elapsed, spec.mediaDuration)
    }

    private func reanchor() {
        let now = clock.now()
        playback.anchorPosition = position(at: now)
        playback.anchorTime = now
    }

    private func status() -> LoopbackPlaybackStatus {
        LoopbackPlaybackStatus(
            url: playback.url, state: playback.state, position: position(at: clock.now()),
            rate: playback.state == .playing ? playback.rate : 0, duration: spec.mediaDuration)
    }

    private func announcePlayback() -> LoopbackReply {
        .playback(status())
    }

    private func reply(to connection: LoopbackConnection, id: UInt32?, _ body: LoopbackReply) {
        connection.deliver(LoopbackEnvelope(id: id, body: body).encoded(), delay: replyDelay)
    }

    private func deliver(_ event: LoopbackReply, to connection: LoopbackConnection) {
        reply(to: connection, id: nil, event)
    }

    private func broadcast(_ event: LoopbackReply, except skipped: UInt64? = nil) {
        for (id, peer) in peers where id != skipped && peer.paired {
            deliver(event, to: peer.connection)
        }
    }
}
